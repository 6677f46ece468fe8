"""Run one function on a named mesh two ways, and check both against one device.

* ``run_global(fn, mesh, args, in_specs, out_spec)``: the global view. The arguments are placed
  with ``NamedSharding(mesh, P(*spec))`` and ``jax.jit(fn, in_shardings=..., out_shardings=...)``
  runs on the whole arrays; XLA inserts whatever communication the shardings need.
* ``run_per_device(fn_local, mesh, args, in_specs, out_spec)``: the per-device view.
  ``jax.shard_map`` hands ``fn_local`` each device's block; communication is written out as
  collectives over named axes (``jax.lax.psum(x, 'model')``, ``jax.lax.all_gather(...)``).
* ``collectives_on_axes(mesh, hlo_text)``: each collective in compiled HLO, its replica groups
  read back as mesh axes ("all-reduce over model: 2 groups of 4").

Both runs return plain numbers and text (no device arrays): the output's shape, every device's
block (id, index, shape), the largest difference from ``jax.jit(fn)`` on one device, and the
median of timed calls (:func:`pmapviz.devicefacts.timed_calls`). The one-device reference runs
under a mesh of one device with the same axis names, so a function may name the axes (as in
``jnp.matmul(x, w, out_sharding=P('data', None))``, which Explicit axes ask for when the
contracted dimension is sharded). ``EXAMPLES`` holds ready pairs of the two views.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pmapviz import devicefacts, devicerates, hlo
from pmapviz.meshspecs import Entry, Mesh, default_mesh, jax_mesh, problems, spec_text

Spec = tuple[Entry, ...]
REPEAT = 5


# ---------------------------------------------------------------- results
@dataclass(frozen=True)
class ShardBlock:
    """One device's block of a run's output: the device id, its index and shape."""

    device: int  # the device's id
    index: tuple[tuple[int, int], ...]  # [start, stop) of each dimension of the output
    shape: tuple[int, ...]


@dataclass(frozen=True)
class RunResult:
    """One run on a mesh (global or per-device view), as plain numbers and text."""

    view: str  # "global" (jit with shardings) or "per-device" (shard_map)
    shape: tuple[int, ...]  # the whole output's shape
    dtype: str
    out_spec: Spec
    blocks: tuple[ShardBlock, ...]  # one per device, in the order JAX lists its shards
    max_abs_diff: float  # against jax.jit(fn) on one device, unsharded inputs
    median_s: float
    times_s: tuple[float, ...]
    collectives: tuple = ()  # AxisCollective: what XLA emitted, read back as mesh axes
    memory: tuple[tuple[str, int], ...] = ()  # per device, from the compiled program

    def memory_total(self) -> int | None:
        """Bytes each device holds at the program's peak: its arguments, output and
        temporaries as XLA planned them (None when the backend does not say)."""
        return sum(n for _, n in self.memory) if self.memory else None

    def agrees(self, tol: float = 1e-4) -> bool:
        """Whether the output is within ``tol`` of the one-device result."""
        return self.max_abs_diff <= tol

    def summary(self) -> str:
        """The run in one sentence: output, blocks, difference and median time."""
        local = sorted({b.shape for b in self.blocks})
        return (
            f"{self.view}: output {self.dtype}{list(self.shape)} as {spec_text(self.out_spec)}"
            f", blocks {' / '.join(str(list(s)) for s in local)} on {len(self.blocks)} "
            f"devices; differs from one device by at most {self.max_abs_diff:.3g}; "
            f"median {self.median_s * 1e3:.3f} ms over {len(self.times_s)} calls."
        )


# ---------------------------------------------------------------- the two runs
def run_global(
    fn: Callable,
    mesh: Mesh,
    args: Sequence[Any],
    in_specs: Sequence[Spec],
    out_spec: Spec,
    devices: list | None = None,
    repeat: int = REPEAT,
) -> RunResult:
    """``jax.jit(fn)`` with every argument placed by ``NamedSharding(mesh, P(*spec))`` and the
    output laid out as ``out_spec``: the global view of the computation."""
    m = jax_mesh(mesh, mesh_devices(mesh, devices))
    structs = abstract(m, args, in_specs)
    return run_compiled(
        "global",
        compile_global(fn, m, structs, in_specs, out_spec),
        m,
        compile_one_device(fn, m, structs),
        args,
        in_specs,
        out_spec,
        repeat,
    )


def run_per_device(
    fn_local: Callable,
    mesh: Mesh,
    args: Sequence[Any],
    in_specs: Sequence[Spec],
    out_spec: Spec,
    devices: list | None = None,
    repeat: int = REPEAT,
    reference: Callable | None = None,
) -> RunResult:
    """``jax.shard_map(fn_local)``: each device runs ``fn_local`` on its own block, talking to
    the others only through collectives over the mesh's named axes. ``reference``: the global
    function to check against (default: ``fn_local`` itself, right when it has no collective
    and every input is replicated)."""
    m = jax_mesh(mesh, mesh_devices(mesh, devices))
    structs = abstract(m, args, in_specs)
    ref = reference if reference is not None else fn_local
    return run_compiled(
        "per-device",
        compile_per_device(fn_local, m, structs, in_specs, out_spec),
        m,
        compile_one_device(ref, m, structs),
        args,
        in_specs,
        out_spec,
        repeat,
    )


def abstract(m, args: Sequence[Any], in_specs: Sequence[Spec]) -> list:
    """Each argument as a ``jax.ShapeDtypeStruct`` placed as its spec says on the JAX mesh
    ``m``: what the compiled programs are compiled for, before anything is allocated."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    return [
        jax.ShapeDtypeStruct(
            np.shape(a), np.asarray(a).dtype, sharding=NamedSharding(m, PartitionSpec(*s))
        )
        for a, s in zip(args, in_specs, strict=True)
    ]


def compile_global(fn: Callable, m, structs: list, in_specs: Sequence[Spec], out_spec: Spec):
    """The global view, compiled: ``jax.jit`` with in and out shardings."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    ins = tuple(NamedSharding(m, PartitionSpec(*s)) for s in in_specs)
    f = jax.jit(fn, in_shardings=ins, out_shardings=NamedSharding(m, PartitionSpec(*out_spec)))
    with jax.set_mesh(m):
        return f.lower(*structs).compile()


def compile_per_device(
    fn_local: Callable, m, structs: list, in_specs: Sequence[Spec], out_spec: Spec
):
    """The per-device view, compiled: ``jax.jit(jax.shard_map(...))`` with check_vma."""
    import jax
    from jax.sharding import PartitionSpec

    mapped = jax.shard_map(
        fn_local,
        mesh=m,
        in_specs=tuple(PartitionSpec(*s) for s in in_specs),
        out_specs=PartitionSpec(*out_spec),
        check_vma=True,
    )
    with jax.set_mesh(m):
        return jax.jit(mapped).lower(*structs).compile()


def compile_one_device(fn: Callable, m, structs: list):
    """The reference, compiled: ``jax.jit(fn)`` on whole inputs on the mesh's first device,
    under a one-device mesh with the same axis names (a function may name them)."""
    import jax

    dev = m.devices.flat[0]
    one = jax.make_mesh((1,) * len(m.axis_names), tuple(m.axis_names), devices=[dev])
    whole = [
        jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=jax.sharding.SingleDeviceSharding(dev))
        for s in structs
    ]
    with jax.set_mesh(one):
        return jax.jit(fn).lower(*whole).compile()


def run_compiled(
    view: str, compiled, m, reference, args, in_specs, out_spec: Spec, repeat: int = REPEAT
) -> RunResult:
    """Run a compiled view on ``args`` placed by their specs (read for its HLO and memory,
    then timed), and the compiled ``reference`` on one device; plain numbers back."""
    import jax
    from jax.sharding import NamedSharding, PartitionSpec

    placed = [
        jax.device_put(np.asarray(a), NamedSharding(m, PartitionSpec(*s)))
        for a, s in zip(args, in_specs, strict=True)
    ]
    hlo = compiled.as_text()
    mem = device_memory(compiled)
    out, times = devicerates.timed_calls(lambda: compiled(*placed), repeat)
    blocks = tuple(
        ShardBlock(s.device.id, _index(s.index, out.shape), tuple(s.data.shape))
        for s in out.addressable_shards
    )
    got = np.asarray(out)
    shape, dtype = tuple(out.shape), str(out.dtype)
    out.delete()
    for a in placed:
        a.delete()
    want = _on_one_device(reference, args, m.devices.flat[0])
    diff = float(np.max(np.abs(got.astype(np.float64) - want))) if got.size else 0.0
    return RunResult(
        view,
        shape,
        dtype,
        tuple(out_spec),
        blocks,
        diff,
        statistics.median(times),
        tuple(times),
        tuple(collectives_on_axes(m, hlo)),
        mem,
    )


def _on_one_device(reference, args, dev) -> np.ndarray:
    import jax

    whole = [jax.device_put(np.asarray(a), dev) for a in args]
    out = reference(*whole)
    for a in whole:
        a.delete()
    return np.asarray(out).astype(np.float64)


MEMORY_PARTS = (
    ("arguments", "argument_size_in_bytes"),
    ("output", "output_size_in_bytes"),
    ("temporaries", "temp_size_in_bytes"),
    ("code", "generated_code_size_in_bytes"),
)


def device_memory(compiled) -> tuple[tuple[str, int], ...]:
    """What each device holds for a compiled SPMD program, from XLA's own plan
    (``compiled.memory_analysis()``): its block of the arguments, of the output, its
    temporaries and code, in bytes. Empty when the backend gives no analysis."""
    try:
        stats = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError):  # some backends have none
        return ()
    if stats is None:
        return ()
    return tuple((label, int(getattr(stats, attr, 0) or 0)) for label, attr in MEMORY_PARTS)


def one_device(fn: Callable, mesh: Mesh, args: Sequence[Any], device=None) -> np.ndarray:
    """``jax.jit(fn)`` on whole, unsharded inputs on one device (under a one-device mesh with
    the same axis names), as float64 numpy."""
    dev = device if device is not None else devicefacts.local_devices_for_work()[0]
    m = jax_mesh(Mesh((1,) * len(mesh.names), mesh.names), [dev])
    structs = abstract(m, args, [()] * len(args))
    return _on_one_device(compile_one_device(fn, m, structs), args, dev)


def _index(index: tuple, shape: tuple[int, ...]) -> tuple[tuple[int, int], ...]:
    return tuple(s.indices(n)[:2] for s, n in zip(index, shape, strict=True))


def mesh_devices(mesh: Mesh, devices: list | None) -> list:
    """The mesh's devices: the first of ``devicesetup`` (default: this process's)."""
    devs = list(devices) if devices is not None else devicefacts.local_devices_for_work()
    if len(devs) < mesh.devices:
        raise ValueError(
            f"the mesh {mesh.text()} needs {mesh.devices} devices; this process has {len(devs)}."
        )
    return devs[: mesh.devices]


# ---------------------------------------------------------------- ready examples
def _matmul(x, w):
    return x @ w


def _matmul_rows(x, w):
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec

    return jnp.matmul(x, w, out_sharding=PartitionSpec("data", None))


def _local_matmul_gather(x, w):
    import jax

    return jax.lax.all_gather(x @ w, "model", axis=1, tiled=True, to="invarying")


def _local_matmul_psum(x, w):
    import jax

    return jax.lax.psum(x @ w, "model")


def _column_sums(x):
    return x.sum(axis=0)


def _local_column_sums(x):
    import jax

    return jax.lax.psum(x.sum(axis=0), "data")


def _double(x):
    return x * 2


def _local_gather_rows(x):
    import jax

    return jax.lax.all_gather(x * 2, "data", axis=0, tiled=True, to="invarying")


@dataclass(frozen=True)
class Example:
    """A ready pair of the two views of one function on a mesh, with its shapes, specs and code."""

    key: str
    title: str
    mesh: Mesh
    shapes: tuple[tuple[int, ...], ...]  # one per argument
    in_specs: tuple[Spec, ...]
    out_spec: Spec
    global_fn: Callable  # for run_global (and the one-device reference)
    local_fn: Callable  # for run_per_device
    global_code: str
    local_code: str
    note: str

    def args(self, seed: int = 0) -> list[np.ndarray]:
        """Seeded random float32 arguments of the example's shapes."""
        rng = np.random.default_rng(seed)
        return [rng.standard_normal(s).astype(np.float32) for s in self.shapes]


MESH_2X4 = Mesh((2, 4), ("data", "model"))
EXAMPLES = (
    Example(
        "matmul_gather",
        "x @ w, columns gathered over model",
        MESH_2X4,
        ((16, 8), (8, 16)),
        (("data", None), (None, "model")),
        ("data", None),
        _matmul,
        _local_matmul_gather,
        "x @ w",
        "jax.lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')",
        "Each device multiplies its rows of x by its columns of w; the columns are then "
        "gathered over model, so every device in a data row holds whole rows of the "
        "product.",
    ),
    Example(
        "matmul_psum",
        "x @ w, contracted dimension split over model",
        MESH_2X4,
        ((16, 8), (8, 16)),
        (("data", "model"), ("model", None)),
        ("data", None),
        _matmul_rows,
        _local_matmul_psum,
        "jnp.matmul(x, w, out_sharding=P('data', None))",
        "jax.lax.psum(x @ w, 'model')",
        "Each device multiplies a slice of the inner dimension: a partial sum of the "
        "product. psum over model adds the {model} partial sums.",
    ),
    Example(
        "column_sums",
        "column sums, rows split over data",
        MESH_2X4,
        ((16, 8),),
        (("data", "model"),),
        ("model",),
        _column_sums,
        _local_column_sums,
        "x.sum(axis=0)",
        "jax.lax.psum(x.sum(axis=0), 'data')",
        "Each device sums its rows; psum over data adds the {data} row blocks' sums.",
    ),
    Example(
        "gather_rows",
        "gather rows over data",
        MESH_2X4,
        ((16, 8),),
        (("data", None),),
        (),
        _double,
        _local_gather_rows,
        "x * 2",
        "jax.lax.all_gather(x * 2, 'data', axis=0, tiled=True, to='invarying')",
        "Each device doubles its rows; all_gather over data gives every device the whole array.",
    ),
)
EXAMPLE = {e.key: e for e in EXAMPLES}


def example_mesh(n_devices: int) -> Mesh:
    """The ready examples' mesh on ``n_devices``: the default mesh (:func:`meshes.default_mesh`,
    2x4 for 8), with a data axis of 1 where that has one axis (1x1, 1x3, 1x5): the examples
    name two."""
    shape = default_mesh(n_devices)
    return Mesh(shape if len(shape) == 2 else (1, *shape), MESH_2X4.names)


def examples_for(n_devices: int) -> tuple[Example, ...]:
    """The ready examples on :func:`example_mesh` of ``n_devices``: x (8 data, 2 model) and
    w (2 model, 4 model), which every axis divides (on 2x4, the (16, 8) and (8, 16) of
    :data:`EXAMPLES`), and notes that count the mesh's own axes."""
    mesh = example_mesh(n_devices)
    data, model = mesh.shape
    x, w = (8 * data, 2 * model), (2 * model, 4 * model)
    return tuple(
        replace(
            e, mesh=mesh, shapes=(x, w)[: len(e.shapes)], note=e.note.format(data=data, model=model)
        )
        for e in EXAMPLES
    )


def run_example(
    example: Example, devices: list | None = None, repeat: int = REPEAT
) -> tuple[RunResult, RunResult]:
    """Both views of one example, each checked against one device."""
    args = example.args()
    common = (example.mesh, args, example.in_specs, example.out_spec)
    glob = run_global(example.global_fn, *common, devices=devices, repeat=repeat)
    local = run_per_device(
        example.local_fn, *common, devices=devices, repeat=repeat, reference=example.global_fn
    )
    return glob, local


def sweep_shapes(n_devices: int) -> list[tuple[int, int]]:
    """The 2-D mesh shapes of ``n_devices``: 1 x n, 2 x n/2, ..., n x 1 (8: 1x8, 2x4, 4x2, 8x1)."""
    return [(a, n_devices // a) for a in range(1, n_devices + 1) if n_devices % a == 0]


def mesh_sweep(
    example: Example, shapes: Sequence[tuple[int, int]] | None = None, repeat: int = REPEAT
) -> list[dict]:
    """Both views of ``example`` on each mesh shape of the same devices (same axis names),
    where its shapes divide: one row per shape and view, with the median seconds, whether it
    agrees with one device, and the collectives XLA emitted as mesh axes. A shape the
    example's arrays do not divide is listed with the reason, not run."""
    rows = []
    for shape in shapes or sweep_shapes(example.mesh.devices):
        ex = replace(example, mesh=Mesh(tuple(shape), example.mesh.names))
        found = [
            p
            for sh, sp in zip(ex.shapes, ex.in_specs, strict=True)
            for p in problems(ex.mesh, sh, sp)
        ]
        label = " x ".join(map(str, shape))
        if found:
            rows.append(
                {
                    "mesh": label,
                    "view": "-",
                    "median ms": None,
                    "agrees": None,
                    "collectives": found[0].message,
                }
            )
            continue
        for res in run_example(ex, repeat=repeat):
            rows.append(
                {
                    "mesh": label,
                    "view": res.view,
                    "median ms": res.median_s * 1e3,
                    "agrees": res.agrees(),
                    "collectives": "; ".join(c.sentence for c in res.collectives) or "none",
                }
            )
    return rows


# ---------------------------------------------------------------- collectives as mesh axes
@dataclass(frozen=True)
class AxisCollective:
    """One collective of a compiled program, its replica groups read back as mesh axes."""

    kind: str  # all-reduce, all-gather, ...
    axes: tuple[str, ...] | None  # mesh axes that vary within each group (None: no match)
    groups: int  # how many groups (collective-permute: how many pairs)
    group_size: int  # devices per group (collective-permute: 2)
    device_groups: tuple[tuple[int, ...], ...]  # device ids, through the mesh's devices
    sentence: str
    line: int  # in the HLO text

    def key(self) -> tuple:
        """(kind, axes, groups, group size): what identifies it, for comparing."""
        return (self.kind, self.axes, self.groups, self.group_size)


def collectives_on_axes(mesh, hlo_text: str) -> list[AxisCollective]:
    """Each collective of a compiled program (``jax.jit(...).lower(...).compile().as_text()``)
    with its replica groups read back as mesh axes. ``mesh``: the JAX mesh the program ran on
    (its ``devicesetup`` array turns the HLO's device numbers, positions in the mesh, into device
    ids), or a :class:`pmapviz.meshspecs.Mesh` (ids in row-major order)."""
    names, shape, ids = _mesh_layout(mesh)
    out = []
    for c in hlo.parse_hlo(hlo_text).collectives:
        if c.source_target_pairs is not None:
            groups = tuple(tuple(p) for p in c.source_target_pairs)
        else:
            groups = c.replica_groups or ()
        axes = (
            _pair_axes(groups, names, shape)
            if c.source_target_pairs is not None
            else (group_axes(groups, names, shape))
        )
        size = len(groups[0]) if groups else 0
        dev_groups = tuple(tuple(int(ids[k]) for k in g) for g in groups)
        out.append(
            AxisCollective(
                c.kind,
                axes,
                len(groups),
                size,
                dev_groups,
                _sentence(c.kind, axes, groups, dev_groups, names),
                c.line,
            )
        )
    return out


def _mesh_layout(mesh) -> tuple[tuple[str, ...], tuple[int, ...], list[int]]:
    if isinstance(mesh, Mesh):
        return mesh.names, mesh.shape, list(range(mesh.devices))
    grid = np.asarray(mesh.devices)
    return tuple(mesh.axis_names), tuple(grid.shape), [d.id for d in grid.flat]


def group_axes(
    groups: Sequence[Sequence[int]], names: tuple[str, ...], shape: tuple[int, ...]
) -> tuple[str, ...] | None:
    """The mesh axes whose coordinates vary within each group while the others stay fixed;
    None when the groups are not whole lines of the mesh along the same axes (numbers are
    positions in the mesh, row-major)."""
    n = math.prod(shape)
    flat = sorted(d for g in groups for d in g)
    if not groups or flat != list(range(n)):
        return None
    found = None
    for g in groups:
        coords = np.array(np.unravel_index(list(g), shape)).T  # one row per device
        varying = tuple(a for k, a in enumerate(names) if len(set(coords[:, k])) > 1)
        if found is not None and varying != found:
            return None
        found = varying
        if len(g) != math.prod(s for a, s in zip(names, shape, strict=True) if a in varying):
            return None
    return found


def _pair_axes(pairs, names, shape) -> tuple[str, ...] | None:
    n = math.prod(shape)
    if not pairs or any(d >= n for p in pairs for d in p):
        return None
    moved = set()
    for a, b in pairs:
        ca, cb = np.unravel_index(a, shape), np.unravel_index(b, shape)
        moved |= {names[k] for k in range(len(names)) if ca[k] != cb[k]}
    return tuple(a for a in names if a in moved)


def _sentence(kind: str, axes, groups, dev_groups, names) -> str:
    shown = ", ".join("{" + ",".join(map(str, g)) + "}" for g in dev_groups[:4])
    shown += ", ..." if len(dev_groups) > 4 else ""
    if kind == "collective-permute":
        where = f"along {', '.join(axes)}" if axes else "between devices"
        return f"{kind} {where}: {len(groups)} device-to-device sends ({shown})."
    if axes is None:
        return (
            f"{kind} in {len(groups)} groups that are not lines of the mesh "
            f"({', '.join(names)}): {shown}."
        )
    if not axes:
        return f"{kind} within each device alone ({len(groups)} groups of 1): no communication."
    size = len(groups[0])
    many = "all devices" if len(groups) == 1 else "one group per position of the other axes"
    return (
        f"{kind} over {', '.join(axes)}: {len(groups)} group{'s' * (len(groups) > 1)} of "
        f"{size} ({many}): {shown}."
    )
