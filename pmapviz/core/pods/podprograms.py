"""Programs to compile for a pod: each knows how to lower itself onto a slice's devices.

A :class:`PodProgram` lowers for any :class:`~pmapviz.core.pods.podtopology.Pod` (and, where it
has one, any batch): nothing is allocated, every input is a ``jax.ShapeDtypeStruct``. Two
ways in:

- :func:`on_mesh`: ``jax.jit`` over inputs with ``NamedSharding`` on a mesh of the slice's
  devices (laid out by ``mesh_utils.create_device_mesh``, as ``jax.make_mesh`` does), global
  shapes fixed: the more chips, the less each holds (strong scaling, the sweep's view);
- :func:`from_target`: a pmap target of this machine (the explorer's plan, a collective, the
  training step) re-pointed at the slice: ``jax.pmap(f, devices=the slice's devices)``, each
  device keeping its own block (the mapped axis becomes the slice's device count).

:data:`BUILTIN` holds the programs the CLI and the Pods page offer by name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from pmapviz.core.pods.podtopology import Pod

MiB = 1024**2


@dataclass(frozen=True)
class Lowered:
    """A program lowered for a slice, and the device ids in the order its HLO numbers them."""

    lowered: object  # jax.stages.Lowered
    order: tuple[int, ...]  # HLO device (replica or partition) k is device id order[k]
    mesh_axes: tuple[tuple[str, int], ...]  # the mesh's axes and sizes, for the pictures
    batch: int | None = None  # the batch compiled (rounded up to split evenly), if any


@dataclass(frozen=True)
class PodProgram:
    """Something to compile for a slice: what it is, and how it lowers."""

    key: str  # a stable name for caches and the CLI: "dot", "train", "psum", "f:<hash>"
    label: str
    code: str  # the program as Python, for the page
    lower: Callable[[Pod, int | None], Lowered] = field(compare=False, hash=False)
    batch: int | None = None  # its batch as set; None: it has no batch to shrink
    batch_words: str = ""  # what the batch counts: "rows of x (the global batch)"
    batch_step: Callable[[Pod], int] = field(default=lambda pod: 1, compare=False, hash=False)

    def at_batch(self, batch: int) -> PodProgram:
        """The same program at another batch."""
        return replace(self, batch=batch)


def _mesh_devices(pod: Pod, shape: tuple[int, ...]):
    import numpy as np
    from jax.experimental import mesh_utils

    try:
        return mesh_utils.create_device_mesh(shape, devices=list(pod.devices))
    except Exception:  # noqa: BLE001  (a shape the physical layout cannot follow: plain order)
        return np.array(pod.devices).reshape(shape)


def on_mesh(
    key: str,
    label: str,
    code: str,
    fn: Callable,
    inputs: Callable[[int | None], list[tuple[tuple[int, ...], str, tuple]]],
    axes: tuple[tuple[str, int | None], ...] = (("chips", None),),
    batch: int | None = None,
    batch_words: str = "",
) -> PodProgram:
    """``jax.jit(fn)`` over inputs ``(shape, dtype, spec)`` (spec: a PartitionSpec's entries)
    on a mesh of the slice: ``axes`` names its axes, a size None takes the chips left over."""

    def lower(pod: Pod, b: int | None) -> Lowered:
        import jax
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        sizes = mesh_shape(axes, pod.n_devices)
        mesh = Mesh(_mesh_devices(pod, sizes), tuple(n for n, _ in axes))
        b = batch if b is None else b
        if b is not None:  # the batch splits over the first mesh axis: round it up to split
            b = -(-b // sizes[0]) * sizes[0]
        args = [
            jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, PartitionSpec(*spec)))
            for shape, dtype, spec in inputs(b)
        ]
        order = tuple(int(d.id) for d in mesh.devices.flat)
        names = tuple(zip(mesh.axis_names, sizes, strict=True))
        with jax.set_mesh(mesh):  # shard_map inside fn takes the mesh from here
            return Lowered(jax.jit(fn).lower(*args), order, names, b)

    return PodProgram(
        key, label, code, lower, batch, batch_words, lambda pod: _batch_step(axes, pod)
    )


def mesh_shape(axes: tuple[tuple[str, int | None], ...], n: int) -> tuple[int, ...]:
    """The mesh's sizes on ``n`` devices: fixed sizes as given, one None takes the rest."""
    fixed = 1
    for _, size in axes:
        fixed *= size or 1
    if n % fixed:
        raise ValueError(f"a mesh of {fixed} devices does not divide the slice's {n}")
    return tuple(size if size else n // fixed for _, size in axes)


def _batch_step(axes, pod: Pod) -> int:
    return mesh_shape(axes, pod.n_devices)[0]


def from_target(target, key: str) -> PodProgram:
    """A pmap target (:class:`pmapviz.core.running.programanalysis.Target`) on the slice's
    devices: every mapped axis becomes the slice's device count."""

    def lower(pod: Pod, b: int | None) -> Lowered:
        import jax

        n = pod.n_devices
        args = [
            a
            if ax is None
            else jax.tree.map(
                lambda s, ax=ax: jax.ShapeDtypeStruct(
                    (*s.shape[:ax], n, *s.shape[ax + 1 :]), s.dtype
                ),
                a,
            )
            for a, ax in zip(target.args, target.in_axes, strict=True)
        ]
        devices = list(pod.devices)
        pm = jax.pmap(
            target.fn,
            in_axes=target.in_axes,
            out_axes=target.out_axes,
            axis_name=target.axis_name,
            devices=devices,
        )
        return Lowered(pm.lower(*args), tuple(int(d.id) for d in devices), (("pmap", n),))

    return PodProgram(key, target.label, target.code, lower)


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


def _psum_block(x):
    import jax

    return jax.lax.psum(x, "chips")


def _psum_fn(x):
    import jax
    from jax.sharding import PartitionSpec as P

    return jax.shard_map(_psum_block, in_specs=P("chips"), out_specs=P("chips"))(x)


def dot(rows: int = DOT_ROWS) -> PodProgram:
    """The seed's dot products: ``rows`` pairs of 3-vectors, split over every chip."""
    return on_mesh(
        "dot",
        f"{rows:,} dot products of 3-vectors",
        "jax.jit(jax.vmap(jnp.dot))(x, y)  # x, y: f32[rows, 3], rows split over the chips",
        _dot_fn,
        lambda b: [((b, 3), "float32", ("chips",))] * 2,
        batch=rows,
        batch_words="dot products (rows of x and y)",
    )


def train(batch: int = TRAIN_BATCH, width: int = TRAIN_WIDTH) -> PodProgram:
    """One data-parallel step: w replicated, the batch split over every chip."""
    return on_mesh(
        "train",
        f"data-parallel step: w f32[{width},{width}], batch {batch:,}",
        "def step(w, x):                # w replicated, x split on its batch over the chips\n"
        "    loss = lambda w: jnp.mean(jnp.tanh(x @ w) ** 2)\n"
        "    return w - 0.01 * jax.grad(loss)(w)   # XLA all-reduces the gradient",
        _train_step,
        lambda b: [((width, width), "float32", ()), ((b, width), "float32", ("chips",))],
        batch=batch,
        batch_words="examples in the global batch (rows of x)",
    )


def psum(rows: int = PSUM_ROWS, cols: int = PSUM_COLS) -> PodProgram:
    """``lax.psum`` over every chip of a f32[rows, cols] block on each."""

    def inputs(b):
        return [((b, cols), "float32", ("chips",))]

    prog = on_mesh(
        "psum",
        f"lax.psum over every chip of f32[{rows},{cols}] each",
        "jax.shard_map(lambda x: lax.psum(x, 'chips'), in_specs=P('chips'), out_specs=P('chips'))",
        _psum_fn,
        inputs,
    )

    def lower(pod: Pod, b: int | None) -> Lowered:
        return on_mesh(
            prog.key, prog.label, prog.code, _psum_fn, lambda _: inputs(rows * pod.n_devices)
        ).lower(pod, None)

    return replace(prog, lower=lower)


BUILTIN: dict[str, Callable[[], PodProgram]] = {"dot": dot, "train": train, "psum": psum}
