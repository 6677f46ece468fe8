"""Run by tests/core/running/test_pmapcompile.py in a fresh process: 16 new pmap programs compiled
and dropped, first with compile_plan's forgetting switched off (pmapcompile.forget_pmap), then as it
is; prints how many bytes of RSS each phase kept (after gc and malloc_trim)."""

import ctypes
import gc
import sys

from pmapviz.core.devices import jaxstartup

jaxstartup.apply(jaxstartup.Settings(devices=2, platform="cpu"))

import psutil  # noqa: E402

from pmapviz.core.expressions import functions  # noqa: E402
from pmapviz.core.planning.planning import plan  # noqa: E402
from pmapviz.core.running import pmapcompile  # noqa: E402

PROC = psutil.Process()


def rss() -> int:
    gc.collect()
    ctypes.CDLL(None).malloc_trim(0)
    return PROC.memory_info().rss


def phase(first: int) -> int:
    prog, base = functions.get("double"), rss()
    for k in range(16):
        pmapcompile.compile_plan(prog, plan(prog, [(2, first + 8 * k)], n_devices=2))
    return rss() - base


def main() -> int:
    import jax

    prog = functions.get("double")
    pmapcompile.compile_plan(prog, plan(prog, [(2, 4)], n_devices=2))  # first-use costs
    real = pmapcompile.forget_pmap
    pmapcompile.forget_pmap = lambda fn: None
    without = phase(1000)
    pmapcompile.forget_pmap = real
    jax.clear_caches()
    with_bound = phase(5000)
    print(without, with_bound)
    return 0


if __name__ == "__main__":
    sys.exit(main())
