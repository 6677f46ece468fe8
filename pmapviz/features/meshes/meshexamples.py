"""Ready examples of one function on a named mesh, both views each (the global ``jit`` with
shardings and the per-device ``shard_map`` with collectives over named axes), with their shapes,
specs and code; run on this process's devices, and timed over every 2-D mesh shape of the same
devices (:func:`mesh_sweep`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pmapviz.features.meshes.meshsettings import default_mesh
from pmapviz.features.meshes.meshspecs import Mesh, problems
from pmapviz.features.meshes.meshviews import REPEAT, RunResult, Spec, run_global, run_per_device


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
    """The ready examples' mesh on ``n_devices``: the default mesh
    (:func:`pmapviz.features.meshes.meshsettings.default_mesh`, 2x4 for 8), with a data axis of 1
    where that
    has one axis (1x1, 1x3, 1x5): the examples name two."""
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
