"""Programs to compile for a pod: each knows how to lower itself onto a slice's devices.

A :class:`PodProgram` lowers for any :class:`~pmapviz.core.pods.podtopology.Pod` (and, where it
has one, any batch): nothing is allocated, every input is a ``jax.ShapeDtypeStruct``. Two
ways in:

- :func:`on_mesh`: ``jax.jit`` over inputs with ``NamedSharding`` on a mesh of the slice's
  devices (laid out by ``mesh_utils.create_device_mesh``, as ``jax.make_mesh`` does), global
  shapes fixed: the more chips, the less each holds (strong scaling, the sweep's view);
- :func:`from_target`: a pmap target of this machine (the explorer's plan, a collective, the
  training step) re-pointed at the slice: ``jax.pmap(f, devices=the slice's devices)``, each
  device keeping its own block (the mapped axis becomes the slice's device count). On several
  slices the pmap runs over every slice's devices, slice by slice, and a note says what that
  is on a mesh (:func:`pmap_across_note`).

:data:`BUILTIN` holds the programs the CLI and the Pods page offer by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pmapviz.core.pods import compiledinputs
from pmapviz.core.pods.compiledinputs import Change, Input
from pmapviz.core.pods.podtopology import Pod

MiB = 1024**2


@dataclass(frozen=True)
class Lowered:
    """A program lowered for a slice, the device ids in the order its HLO numbers them, and what
    was lowered: each argument read from the lowered program, and every size changed on the way
    (:mod:`~pmapviz.core.pods.compiledinputs`)."""

    lowered: object  # jax.stages.Lowered
    order: tuple[int, ...]  # HLO device (replica or partition) k is device id order[k]
    mesh_axes: tuple[tuple[str, int], ...]  # the mesh's axes and sizes, for the pictures
    inputs: tuple[Input, ...] = ()  # read from lowered.in_avals
    changes: tuple[Change, ...] = ()  # what pmapviz changed before lowering, and why
    batch_at: int | None = None  # which of ``inputs`` carries the batch (on its axis 0)
    notes: tuple[str, ...] = ()  # what to know of the layout before any figure (nothing changed)

    @property
    def batch(self) -> int | None:
        """The batch compiled, read from the lowered program's argument (None: no batch)."""
        return None if self.batch_at is None else self.inputs[self.batch_at].shape[0]


@dataclass(frozen=True)
class PodProgram:
    """Something to compile for a slice: what it is, and how it lowers.

    ``label`` names the program, never its sizes: every label of a compile adds the arguments
    as the lowered program has them (:attr:`Lowered.inputs`), so it names what was compiled."""

    key: str  # a stable name for caches and the CLI: "dot", "train", "psum", "f:<hash>"
    label: str  # 'data-parallel step'
    code: str  # the program as Python, for the page
    lower: Callable[[Pod, int | None], Lowered] = field(compare=False, hash=False)
    batch: int | None = None  # its batch as set; None: it has no batch to shrink
    batch_words: str = ""  # what the batch counts: "rows of x (the global batch)"
    batch_step: Callable[[Pod], int] = field(default=lambda pod: 1, compare=False, hash=False)
    sizes: tuple = ()  # the fixed sizes it was made with (the training step's width): a cache key

    def at_batch(self, batch: int) -> PodProgram:
        """The same program at another batch."""
        return replace(self, batch=batch)

    def asked_text(self) -> str:
        """The program as asked, before any slice: 'data-parallel step, batch 8,192'."""
        return self.label + ("" if self.batch is None else f", batch {self.batch:,}")


def mesh_devices(pod: Pod, shape: tuple[int, ...]):
    """The slice's devices as a mesh of ``shape``, laid out as ``jax.make_mesh`` would on a real
    slice (``mesh_utils.create_device_mesh``), in plain order where the layout cannot follow."""
    import numpy as np
    from jax.experimental import mesh_utils

    try:
        return mesh_utils.create_device_mesh(shape, devices=list(pod.devices))
    except Exception:  # noqa: BLE001  (a shape the physical layout cannot follow: plain order)
        return np.array(pod.devices).reshape(shape)


Spec = tuple[tuple[int, ...], str, tuple]  # an input: (global shape, dtype, PartitionSpec entries)


def on_mesh(
    key: str,
    label: str,
    code: str,
    fn: Callable,
    inputs: Callable[[int | None], list[Spec]],
    axes: tuple[tuple[str, int | None], ...] = (("chips", None),),
    batch: int | None = None,
    batch_words: str = "",
    names: tuple[str, ...] = (),
    batch_at: int | None = None,
    explicit: bool = False,
) -> PodProgram:
    """``jax.jit(fn)`` over inputs ``(shape, dtype, spec)`` (spec: a PartitionSpec's entries)
    on a mesh of the slice: ``axes`` names its axes, a size None takes the chips left over;
    ``explicit``: the mesh's axes are ``AxisType.Explicit`` (sharding in the types, as
    ``jax.make_mesh`` makes them), else Auto.
    ``names`` name the inputs; ``inputs[batch_at]`` carries the batch on its axis 0, which is
    split over the first mesh axis: a batch that does not divide it is rounded up, and the
    :class:`Change` says so (with JAX's own refusal of the batch as asked)."""

    def lower(pod: Pod, b: int | None) -> Lowered:
        import jax
        from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

        grid, axis_names, sizes, spec_of = laid_out(pod, axes)
        kind = AxisType.Explicit if explicit else AxisType.Auto
        mesh = Mesh(grid, axis_names, (kind,) * len(axis_names))
        split = _batch_step(axes, pod)  # the devices the batch splits over
        split_name = axis_names[0] if len(axis_names) == len(axes) else str(axis_names[:2])
        inputs_on = lambda at: [(s, d, spec_of(spec)) for s, d, spec in inputs(at)]  # noqa: E731

        def structs(at: int | None) -> list:
            return [
                jax.ShapeDtypeStruct(s, dtype, sharding=NamedSharding(mesh, PartitionSpec(*spec)))
                for s, dtype, spec in inputs_on(at)
            ]

        def lowered(args: list):
            with jax.set_mesh(mesh):  # shard_map inside fn takes the mesh from here
                return jax.jit(fn).lower(*args)

        asked = batch if b is None else b
        changes: tuple[Change, ...] = ()
        used = asked
        if asked is not None and asked % split:  # JAX refuses it: round up, and say so
            used = -(-asked // split) * split
            said = _refusal_of(lambda: lowered(structs(asked)))
            changes = (compiledinputs.batch_rounded(asked, used, split, split_name, said),)
        args = structs(used)
        low = lowered(args)
        layouts = [layout_text(spec) for _, _, spec in inputs_on(used)]
        blocks = [a.sharding.shard_shape(a.shape) for a in args]
        order = tuple(int(d.id) for d in mesh.devices.flat)
        mesh_axes = tuple(zip(mesh.axis_names, sizes, strict=True))
        found = compiledinputs.inputs_of(low, names, layouts, blocks)
        at = batch_at if asked is not None else None
        notes = (dcn_note(axes[0][0], mesh_axes),) if len(axis_names) > len(axes) else ()
        return Lowered(low, order, mesh_axes, found, changes, at, notes)

    return PodProgram(
        key, label, code, lower, batch, batch_words, lambda pod: _batch_step(axes, pod)
    )


DCN = "dcn"  # the mesh axis across slices (Multislice): data parallelism over the DCN


def laid_out(pod: Pod, axes: tuple[tuple[str, int | None], ...]):
    """(device grid, axis names, sizes, spec rewrite) of a program's mesh on ``pod``: its own
    axes on one slice; on several, a ``dcn`` axis outermost (one position a slice, as
    ``mesh_utils.create_hybrid_device_mesh`` lays it) and the program's first axis, the data
    axis, split over ``('dcn', <first>)``: data parallelism across slices, the rest inside one."""
    slices = pod.n_slices
    if slices == 1:
        sizes = mesh_shape(axes, pod.n_devices)
        return mesh_devices(pod, sizes), tuple(n for n, _ in axes), sizes, lambda spec: spec
    sizes = (slices, *mesh_shape(axes, pod.n_devices // slices))
    first = axes[0][0]

    def spec_of(spec: tuple) -> tuple:
        return tuple(
            (DCN, first) if e == first else (DCN, *e) if isinstance(e, tuple) and first in e else e
            for e in spec
        )

    return hybrid_devices(pod, sizes), (DCN, *(n for n, _ in axes)), sizes, spec_of


def hybrid_devices(pod: Pod, sizes: tuple[int, ...]):
    """The devices of a multislice pod as a grid of ``sizes`` = (slices, *one slice's mesh):
    ``mesh_utils.create_hybrid_device_mesh`` (each slice's mesh laid on its chips as
    ``jax.make_mesh`` does), in slice-then-plain order where it cannot follow."""
    import numpy as np
    from jax.experimental import mesh_utils

    inner, outer = (1, *sizes[1:]), (sizes[0],) + (1,) * (len(sizes) - 1)
    try:
        return mesh_utils.create_hybrid_device_mesh(inner, outer, devices=list(pod.devices))
    except Exception:  # noqa: BLE001  (a shape the physical layout cannot follow: plain order)
        slice_of = {c.id: c.slice for c in pod.chips}
        ordered = sorted(pod.devices, key=lambda d: slice_of[int(d.id)])
        return np.array(ordered).reshape(sizes)


def dcn_note(first: str, mesh_axes: tuple[tuple[str, int], ...]) -> str:
    """What the multislice layout changed, written from the mesh: 'the mesh is ('dcn', 'chips')
    = 2 x 8: ...'."""
    names = tuple(n for n, _ in mesh_axes)
    shape = " x ".join(str(s) for _, s in mesh_axes)
    return (
        f"the mesh is {names} = {shape}: {mesh_axes[0][1]} slices on the outermost axis "
        f"{DCN!r}, and what the program splits over {first!r} is split over ({DCN!r}, "
        f"{first!r}): data parallelism across slices, over the data-center network."
    )


def layout_text(spec: tuple) -> str:
    """'replicated', or "split by P('chips')"."""
    if not any(e is not None for e in spec):
        return "replicated"
    return "split by P(" + ", ".join("None" if e is None else repr(e) for e in spec) + ")"


def _refusal_of(attempt: Callable[[], object]) -> str:
    """JAX's words where ``attempt`` raises, verbatim ('' where it does not)."""
    try:
        attempt()
    except Exception as err:  # noqa: BLE001  (JAX's refusal is the finding)
        return f"{type(err).__name__}: {err}"
    return ""


def mesh_shape(axes: tuple[tuple[str, int | None], ...], n: int) -> tuple[int, ...]:
    """The mesh's sizes on ``n`` devices: fixed sizes as given, one None takes the rest."""
    fixed = 1
    for _, size in axes:
        fixed *= size or 1
    if n % fixed:
        raise ValueError(f"a mesh of {fixed} devices does not divide the slice's {n}")
    return tuple(size if size else n // fixed for _, size in axes)


def _batch_step(axes, pod: Pod) -> int:
    """The devices the batch splits over: the first axis, times the slices on several."""
    return pod.n_slices * mesh_shape(axes, pod.n_devices // pod.n_slices)[0]


def from_target(target, key: str, names: tuple[str, ...] = ()) -> PodProgram:
    """A pmap target (:class:`pmapviz.core.running.programanalysis.Target`) on the slice's
    devices: every mapped axis becomes the slice's device count, and each :class:`Change` says
    which argument, which axis, and its shape before and after."""

    def lower(pod: Pod, b: int | None) -> Lowered:
        import jax

        n, changes, args = pod.n_devices, [], []
        leaf_names = iter(names or _arg_names(target))
        for k, (a, ax) in enumerate(zip(target.args, target.in_axes, strict=True)):
            leaves, tree = jax.tree.flatten(a)
            new = []
            for j, s in enumerate(leaves):
                name = next(leaf_names, f"args[{k}]" + (f"[{j}]" if len(leaves) > 1 else ""))
                if ax is None or s.shape[ax] == n:
                    new.append(s)
                    continue
                shape = (*s.shape[:ax], n, *s.shape[ax + 1 :])
                changes.append(compiledinputs.axis_relaid(name, ax, tuple(s.shape), shape, n))
                new.append(jax.ShapeDtypeStruct(shape, s.dtype))
            args.append(jax.tree.unflatten(tree, new))
        devices = list(pod.devices)
        pm = jax.pmap(
            target.fn,
            in_axes=target.in_axes,
            out_axes=target.out_axes,
            axis_name=target.axis_name,
            devices=devices,
        )
        if changes:  # JAX's own words for the call as given, on these devices
            said = _refusal_of(lambda: pm.lower(*target.args))
            changes = [replace(c, jax_said=said) for c in changes]
        low = pm.lower(*args)
        placed = [
            (ax, leaf.shape)
            for a, ax in zip(args, target.in_axes, strict=True)
            for leaf in jax.tree.leaves(a)
        ]
        layouts = ["replicated" if ax is None else f"pmap axis {ax}" for ax, _ in placed]
        blocks = [s if ax is None else (*s[:ax], *s[ax + 1 :]) for ax, s in placed]
        found = compiledinputs.inputs_of(low, names or _arg_names(target), layouts, blocks)
        order = tuple(int(d.id) for d in devices)
        notes = (pmap_across_note(target.axis_name, pod, order),) if pod.n_slices > 1 else ()
        return Lowered(low, order, (("pmap", n),), found, tuple(changes), notes=notes)

    return PodProgram(key, target.label, target.code, lower)


def pmap_across_note(axis: str | None, pod: Pod, order: tuple[int, ...]) -> str:
    """What a pmap over several slices is, written from the devices' order: its one axis runs
    over every slice, so the data-center network has no axis of its own; on a mesh it is
    ``('dcn', axis)`` (the same collectives: ``tests/core/pods/test_podcompile.py``)."""
    per_slice = pod.slice_order(order)
    s, per, name = len(per_slice), len(per_slice[0]), axis or "i"
    firsts = [order.index(ids[0]) for ids in per_slice]
    runs = " then ".join(
        f"slice {k}'s {len(ids)} (positions {at}-{at + len(ids) - 1})"
        for k, (ids, at) in enumerate(zip(per_slice, firsts, strict=True))
    )
    if tuple(d for ids in per_slice for d in ids) != order:  # not slice by slice
        runs = f"{per} a slice, in libtpu's order, the slices interleaved"
    return (
        f"pmap's one axis {name!r} runs over all {len(order)} devices of the {s} slices: {runs}. "
        f"pmap has no second axis to name the data-center network, so a collective over "
        f"{name!r} spans the slices and the compiler splits it between ICI (inside a slice) "
        f"and DCN (between slices). On a mesh the same program names that network: axes "
        f"({DCN!r}, {name!r}) = {s} x {per}, the mapped axis split by P(({DCN!r}, {name!r})) "
        f"and each collective over ({DCN!r}, {name!r}), which compiles to the same collectives."
    )


def _arg_names(target) -> tuple[str, ...]:
    """The target's argument leaves as named (``Target.names``, where it has them)."""
    return tuple(getattr(target, "names", ()) or ())


# ---------------------------------------------------------------- the built-in programs
DOT_ROWS = 10_000_000
TRAIN_BATCH, TRAIN_WIDTH = 8192, 4096
PSUM_ROWS, PSUM_COLS = 4096, 4096  # 64 MiB of f32 on every device


def _dot_fn(x, y):
    import jax
    import jax.numpy as jnp

    return jax.vmap(jnp.dot)(x, y)


def _train_step(w, x):
    import jax
    import jax.numpy as jnp

    def loss(w):
        return jnp.mean(jnp.tanh(x @ w) ** 2)

    return w - 0.01 * jax.grad(loss)(w)


def _psum_fn(x):
    """``psum`` over every axis of the context mesh ('chips'; ('dcn', 'chips') on slices)."""
    import jax
    from jax.sharding import PartitionSpec as P

    names = tuple(jax.sharding.get_abstract_mesh().axis_names)
    axis = names[0] if len(names) == 1 else names
    return jax.shard_map(lambda b: jax.lax.psum(b, axis), in_specs=P(axis), out_specs=P(axis))(x)


def dot(rows: int = DOT_ROWS) -> PodProgram:
    """The seed's dot products: ``rows`` pairs of 3-vectors, split over every chip."""
    return on_mesh(
        "dot",
        "dot products of 3-vectors",
        "jax.jit(jax.vmap(jnp.dot))(x, y)  # x, y: f32[rows, 3], rows split over the chips",
        _dot_fn,
        lambda b: [((b, 3), "float32", ("chips",))] * 2,
        batch=rows,
        batch_words="dot products (rows of x and y)",
        names=("x", "y"),
        batch_at=0,
    )


def train(batch: int = TRAIN_BATCH, width: int = TRAIN_WIDTH) -> PodProgram:
    """One data-parallel step: w replicated, the batch split over every chip."""
    prog = on_mesh(
        "train",
        "data-parallel step",
        "def step(w, x):                # w replicated, x split on its batch over the chips\n"
        "    loss = lambda w: jnp.mean(jnp.tanh(x @ w) ** 2)\n"
        "    return w - 0.01 * jax.grad(loss)(w)   # XLA all-reduces the gradient",
        _train_step,
        lambda b: [((width, width), "float32", ()), ((b, width), "float32", ("chips",))],
        batch=batch,
        batch_words="examples in the global batch (rows of x)",
        names=("w", "x"),
        batch_at=1,
    )
    return replace(prog, sizes=(width,))


def psum(rows: int = PSUM_ROWS, cols: int = PSUM_COLS) -> PodProgram:
    """``lax.psum`` over every chip of a f32[rows, cols] block on each."""

    def inputs(b):
        return [((b, cols), "float32", ("chips",))]

    prog = on_mesh(
        "psum",
        "lax.psum over every chip",
        "jax.shard_map(lambda x: lax.psum(x, 'chips'), in_specs=P('chips'), out_specs=P('chips'))",
        _psum_fn,
        inputs,
        names=("x",),
    )

    def lower(pod: Pod, b: int | None) -> Lowered:
        return on_mesh(
            prog.key,
            prog.label,
            prog.code,
            _psum_fn,
            lambda _: inputs(rows * pod.n_devices),
            names=("x",),
        ).lower(pod, None)

    return replace(prog, lower=lower, sizes=(rows, cols))


BUILTIN: dict[str, Callable[[], PodProgram]] = {"dot": dot, "train": train, "psum": psum}
