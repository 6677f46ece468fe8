"""The sandbox's worker side (pmapviz.app.sandboxworker): tasks rebuilt from their settings, errors
sent back as themselves, and a real worker process that answers every task."""

import pytest

from pmapviz.app import sandboxworker
from pmapviz.core.expressions import expr, exprvocab
from pmapviz.core.planning.planning import plan
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from pmapviz.features.meshes import migration
from pmapviz.features.timing import benchmarking
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_an_error_in_the_worker_comes_back_as_itself():
    ok, err = sandboxworker.answer(("live", ("expr", "x", "x +"), (), "arange", 0, 1))
    assert not ok and isinstance(err, exprvocab.ExprError)
    ok, err = sandboxworker.answer(("no such task",))
    assert not ok and isinstance(err, KeyError | RuntimeError)


@pytest.fixture
def own_f():
    sandbox._WORKER.stop()
    prog = expr.program("x, y", "x * y + 1")
    p = plan(prog, [(N, 6), (N, 6)], n_devices=N)
    yield prog, p
    sandbox._WORKER.stop()


def test_timing_own_f_runs_in_the_worker_and_measures_it(own_f):
    prog, p = own_f
    report = benchmarking.measure_plan(prog, p, repeat=2, bandwidth_gbs=10.0)
    assert sandbox._WORKER.alive()  # the measurement ran there
    impls = {r.impl for r in report.results}
    assert {"pmap", "vmap"} <= impls
    assert all(r.run_s_median > 0 for r in report.results)


def test_pmap_beside_shard_map_of_own_f_runs_in_the_worker(own_f):
    prog, p = own_f
    res = migration.run_both(prog, p)
    assert sandbox._WORKER.alive()
    assert res.agree and res.max_abs_diff == 0


def test_the_worker_tasks_agree_with_the_same_work_here():
    prog = expr.program("x", "jnp.cumsum(x, axis=-1)")
    p = plan(prog, [(N, 5)], n_devices=N)
    ref = ("expr", "x", "jnp.cumsum(x, axis=-1)")
    there = sandboxworker.live(ref, p.key, "arange", 0, 2)
    here = pmaprun.run_plan(prog, p, pmapcompile.compile_plan(prog, p), "arange", 0, 2)
    assert there.rows == here.rows and there.passed


def test_your_f_on_a_mesh_runs_in_the_worker_as_it_would_here():
    from pmapviz.features.meshes import meshownf, meshsettings, meshspecs

    sandbox._WORKER.stop()
    try:
        shape = meshsettings.default_mesh(N)
        mesh = meshspecs.Mesh(shape, ("a", "b")[: len(shape)])
        args = [("x", (2 * shape[0], 3), (mesh.names[0], None))]
        f = meshownf.MeshF("x", "x * 2", "x * 2", (mesh.names[0], None))
        checked = meshownf.check(mesh, args, f)
        assert checked.ok, checked.problems
        there = meshownf.run(mesh, args, f, checked)
        assert sandbox._WORKER.alive()
        here = meshownf.run_views(mesh, args, f)
        assert [r.shape for r in there] == [r.shape for r in here]
        assert [r.blocks for r in there] == [r.blocks for r in here]
        assert all(r.agrees() for r in there)
    finally:
        sandbox._WORKER.stop()
