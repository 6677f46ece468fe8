"""The typed view of a 200-equation program, for the mode on screen, against what
``jax.make_jaxpr`` plus one compile of the same program take in the same process.

    .venv/bin/python benchmarks/types_speed.py [--devices 8] [--repeat 7] [--layers 66]

Each repeat builds the program afresh (a new function: no JAX cache holds it; the persistent
compilation cache is off), then times, interleaved (which goes first alternates): the
baseline (``jax.make_jaxpr`` of the mode's function, then ``jax.jit(...).lower(...).compile()``)
and pmapviz's typed view
(``typedprogram.typed``: trace, walk, one compile, the compiled module read and matched to the
equations, and the grid's HTML). Also printed: the host memory one compile of it added (the
estimate :func:`pmapviz.features.types.typedcompile.compile_need` holds must cover it).
Goal (issue 64): typed view / baseline <= 1.2 for every mode.
"""

from __future__ import annotations

import os
import statistics
import time

os.environ["PMAPVIZ_COMPILE_CACHE"] = "off"  # every compile is a compile

import common  # noqa: E402  (sets sys.path and the device count)


def program(layers: int):
    """f(x, w): ``layers`` times x = tanh(x @ w) + 1, then a sum over the split axis: 3
    equations a layer, one more for the sum (a collective)."""
    import jax.numpy as jnp

    def f(x, w):
        for _ in range(layers):
            x = jnp.tanh(x @ w) + 1.0
        return x.sum(axis=0)

    return f


def _baseline(mp) -> float:
    """``jax.make_jaxpr`` of the mode's function, then one compile of it: seconds."""
    import jax

    with jax.set_mesh(mp.mesh):
        t = time.perf_counter()
        jax.make_jaxpr(mp.fn)(*mp.args)
        jax.jit(mp.fn).lower(*mp.args).compile()
        return time.perf_counter() - t


def main() -> int:
    args = common.start(__doc__, repeat=7, layers=66)
    import jax
    import jax.numpy as jnp

    from pmapviz.core.devices import hostmemory
    from pmapviz.features.meshes.meshspecs import Mesh
    from pmapviz.features.types import typedcompile, typedhtml, typedprogram, typedsources
    from pmapviz.features.types.typedmodes import MODES

    n = args.devices
    mesh = Mesh((2, n // 2), ("data", "model")) if n % 2 == 0 and n >= 4 else Mesh((n,), ("data",))
    rows = 64 * mesh.shape[0]
    structs = (
        jax.ShapeDtypeStruct((rows, 32), jnp.float32),
        jax.ShapeDtypeStruct((32, 32), jnp.float32),
    )
    specs = (("data", None), ())
    from jax.sharding import PartitionSpec

    def source():
        f = program(args.layers)
        return typedsources.from_function(f, structs, mesh, specs, PartitionSpec("data"))

    print(f"typed view of a {3 * args.layers + 1}-equation program on {mesh.text()}, "
          f"{args.repeat} repeats (median)")  # fmt: skip
    print(f"  {'mode':<9} {'eqns':>5} {'make_jaxpr+compile':>19} {'typed view':>11} {'ratio':>6}  "
          "compile's host growth")  # fmt: skip
    worst = 0.0
    for mode in MODES:
        base, typed, grew, eqns = [], [], [], 0
        for rep in range(args.repeat):
            for which in ("base", "typed") if rep % 2 == 0 else ("typed", "base"):
                if which == "base":
                    base.append(_baseline(source().mode(mode)))
                    continue
                src = source()
                with hostmemory.HostGrowth() as growth:
                    t = time.perf_counter()
                    view = typedprogram.typed(src, mode)
                    typedhtml.grid_html({mode: view}, mesh, typedhtml.describe({mode: view}, "f"))
                    typed.append(time.perf_counter() - t)
                grew.append(growth.peak_bytes or 0)
                eqns = len(view.rows)
                assert view.error is None, view.error
        b, v = statistics.median(base), statistics.median(typed)
        worst = max(worst, v / b)
        need = typedcompile.compile_need(eqns).total
        print(f"  {mode:<9} {eqns:>5} {b * 1e3:>16.0f} ms {v * 1e3:>8.0f} ms {v / b:>6.2f}  "
              f"{max(grew) / 2**20:.1f} MiB (held: {need / 2**20:.0f} MiB)")  # fmt: skip
    print(f"worst ratio {worst:.2f} (goal <= 1.2): {'OK' if worst <= 1.2 else 'SLOW'}")
    return 0 if worst <= 1.2 else 1


if __name__ == "__main__":
    raise SystemExit(main())
