"""Run one function on a named mesh two ways, and check both against one device.

* ``run_global(fn, mesh, args, in_specs, out_spec)``: the global view. The arguments are placed
  with ``NamedSharding(mesh, P(*spec))`` and ``jax.jit(fn, in_shardings=..., out_shardings=...)``
  runs on the whole arrays; XLA inserts whatever communication the shardings need.
* ``run_per_device(fn_local, mesh, args, in_specs, out_spec)``: the per-device view.
  ``jax.shard_map`` hands ``fn_local`` each device's block; communication is written out as
  collectives over named axes (``jax.lax.psum(x, 'model')``, ``jax.lax.all_gather(...)``).

Both runs return plain numbers and text (no device arrays): the output's shape, every device's block
(id, index, shape), the largest difference from ``jax.jit(fn)`` on one device, the median of timed
calls (:func:`pmapviz.core.devices.devicerates.timed_calls`), the collectives XLA emitted read back
as mesh axes (:mod:`pmapviz.features.meshes.meshcollectives`) and each device's memory
(:func:`pmapviz.core.budgets.compiledmemory.device_memory`). The one-device reference runs under a
mesh of one device with the same axis names, so a function may name the axes (as in ``jnp.matmul(x,
w, out_sharding=P('data', None))``, which Explicit axes ask for when the contracted dimension is
sharded). Ready pairs of the two views are
:mod:`pmapviz.features.meshes.meshexamples`.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pmapviz.core.budgets.compiledmemory import device_memory
from pmapviz.core.devices import devicefacts, devicerates
from pmapviz.features.meshes.meshcollectives import collectives_on_axes
from pmapviz.features.meshes.meshplacement import jax_mesh
from pmapviz.features.meshes.meshspecs import Entry, Mesh, spec_text

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
    """The mesh's devices: the first of ``jaxstartup`` (default: this process's)."""
    devs = list(devices) if devices is not None else devicefacts.local_devices_for_work()
    if len(devs) < mesh.devices:
        raise ValueError(
            f"the mesh {mesh.text()} needs {mesh.devices} devices; this process has {len(devs)}."
        )
    return devs[: mesh.devices]
