"""Run by tests/core/test_compiledplans.py in a fresh process: 16 new pmap programs compiled and
dropped, first with compile_plan's forgetting switched off (compiledplans.forget_pmap), then as it
is; prints how many bytes of RSS each phase kept (after gc and malloc_trim)."""

import ctypes
import gc
import sys

from pmapviz import devicesetup

devicesetup.apply(devicesetup.Settings(devices=2, platform="cpu"))

import psutil  # noqa: E402

from pmapviz import catalog, compiledplans  # noqa: E402
from pmapviz.planning import plan  # noqa: E402

PROC = psutil.Process()


def rss() -> int:
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)
    return PROC.memory_info().rss


def phase(first: int) -> int:
    prog, base = catalog.get("double"), rss()
    for k in range(16):
        compiledplans.compile_plan(prog, plan(prog, [(2, first + 8 * k)], n_devices=2))
    return rss() - base


def main() -> int:
    import jax

    prog = catalog.get("double")
    compiledplans.compile_plan(prog, plan(prog, [(2, 4)], n_devices=2))  # first-use costs
    real = compiledplans.forget_pmap
    compiledplans.forget_pmap = lambda fn: None
    without = phase(1000)
    compiledplans.forget_pmap = real
    jax.clear_caches()
    with_bound = phase(5000)
    print(without, with_bound)
    return 0


if __name__ == "__main__":
    sys.exit(main())
