"""Mesh soak: what one long-lived process keeps after many runs of distinct programs on a
named mesh (issue 28): your own f both ways (pmapviz.features.meshes.meshownf.run) and "Open as
shard_map" (pmapviz.features.meshes.migration.run_both), each with a program it has not compiled
before.

    .venv/bin/python benchmarks/mesh_soak.py [--runs 40]

Five warm-up runs first (JAX's first use of a function is paid once), then ``--runs`` more;
it prints the RSS growth over the warmed-up baseline, in all and per run. Goal: flat (the
results hold plain numbers; pmap's wrapper is evicted and JAX's caches are bounded).
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def rss_mib() -> float:
    pages = int(Path("/proc/self/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=40)
    runs = ap.parse_args().runs
    import jax

    jax.config.update("jax_num_cpu_devices", 8)
    from pmapviz.core.devices import jaxstartup
    from pmapviz.core.expressions import expr
    from pmapviz.core.planning.planning import plan
    from pmapviz.features.meshes import meshownf, meshspecs, migration

    mesh = meshspecs.Mesh((2, 4), ("data", "model"))
    args = [("x", (64, 128), ("data", None)), ("w", (128, 128), (None, "model"))]

    def one(k: int) -> None:
        local = f"lax.all_gather(x @ w * {k + 1}, 'model', axis=1, tiled=True, to='invarying')"
        f = meshownf.MeshF("x, w", f"x @ w * {k + 1}", local, ("data", None))
        meshownf.run(mesh, args, f, meshownf.check(mesh, args, f), repeat=2)
        prog = expr.program("x", f"x * {k + 1} + 1")
        migration.run_both(prog, plan(prog, [(8, 1000)], in_axes=(0,), n_devices=8))

    for k in range(5):
        one(k)
    gc.collect()
    jaxstartup.return_freed_memory()
    base = rss_mib()
    for k in range(5, 5 + runs):
        one(k)
    gc.collect()
    jaxstartup.return_freed_memory()
    end = rss_mib()
    print(
        f"baseline after 5 warm-up runs {base:.0f} MiB; after {runs} more distinct programs "
        f"{end:.0f} MiB: +{end - base:.1f} MiB ({(end - base) / runs * 1024:.0f} KiB per run)"
    )


if __name__ == "__main__":
    main()
