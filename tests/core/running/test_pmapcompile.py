"""Plans compiled ahead of time: both compiles timed apart, and JAX's own caches kept bounded
while a server compiles program after program."""

from pmapviz.core.expressions import functions
from pmapviz.core.planning.planning import plan
from pmapviz.core.running import pmapcompile
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_compile_plan_times_both_compiles_apart():
    prog = functions.get("double")
    p = plan(prog, [(N, 3)], n_devices=N)
    t0 = __import__("time").perf_counter()
    c = pmapcompile.compile_plan(prog, p)
    took = __import__("time").perf_counter() - t0
    assert 0 < c.compile_s < took and 0 < c.reference_compile_s < took
    assert c.compile_s + c.reference_compile_s <= took


def test_jax_caches_are_bounded_so_a_server_does_not_keep_every_program():
    """Issue 26: JAX 0.10's pmap keeps every function it pmapped, and every shape compiled
    with it, in a cache whose entries never die (~2 MiB each). compile_plan compiles each plan
    with its own function and drops pmap's memo of it once compiled. In a fresh process, 16
    new programs keep at most a quarter of what they keep without that (or 4 MiB)."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    r = subprocess.run(
        [sys.executable, "-m", "tests.core.jax_cache_probe"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    without, bounded = map(int, r.stdout.split())
    assert bounded < max(4 * 2**20, without / 4), (without, bounded)


def test_bound_jax_caches_clears_every_n_programs(monkeypatch):
    import jax

    cleared = []
    monkeypatch.setattr(jax, "clear_caches", lambda: cleared.append(1))
    monkeypatch.setitem(pmapcompile._COMPILES, "since_clear", 0)
    results = [pmapcompile.bound_jax_caches(every=3) for _ in range(7)]
    assert results == [False, False, True, False, False, True, False] and len(cleared) == 2
