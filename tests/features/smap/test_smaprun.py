"""smap run beside pmap and jit(vmap) on the same values: each device's block read from the
arrays beside pmap's slice, the checks, the budget, your own f in the sandbox's worker; and the
issue's "Done when": for every explorer preset on 1, 2, 3, 5 and 8 devices, and for random
planner cases, smap equals pmap and jit(vmap) where JAX runs both, and where smap refuses, the
page shows JAX's error and a fix that, applied, runs.

Other device counts than this process's need a fresh process: this file run as a script
(``python tests/features/smap/test_smaprun.py COUNT``) walks the presets on COUNT devices, the
refusals through the explorer page in AppTest, and prints one JSON line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[3]
if __name__ != "__main__":
    from pmapviz.core.base import pytrees
    from pmapviz.core.budgets.memorymodel import OVERHEAD
    from pmapviz.core.expressions import expr, functions
    from pmapviz.core.planning.planning import plan
    from pmapviz.features.explorer import presets
    from pmapviz.features.smap import smapcall, smapcompare, smaprefusals, smaprun
    from pmapviz.features.smap.smapsettings import AUTO, SmapSettings
    from tests.conftest import TEST_DEVICES as N


# ---------------------------------------------------------------- one run, read back
def _run(key, shapes, s=None, **kw):
    program = functions.get(key)
    p = plan(program, shapes, n_devices=N, **kw)
    return p, smaprun.run_here(program, p, s or SmapSettings())


def test_each_devices_block_is_read_beside_pmaps_slice():
    p, r = _run("normalise", [(N, 4)], axis_name="i")
    assert r.passed and r.pmap_devices == N and r.block == 1 and len(r.rows) == N
    for d, row in enumerate(r.rows):
        x, out = row["arrays"]
        assert (x["name"], out["name"], out["role"]) == ("x", "out", "output")
        assert x["smap"]["index"] == x["pmap"]["index"] == f"[{d}:{d + 1}, :]"
        assert x["smap"]["shape"] == [1, 4] and x["smap"]["values"] == x["pmap"]["values"]
        assert out["smap"]["index"] == out["pmap"]["index"]
    assert r.types == {"x": f"float32[{N}@i,4]", "out": f"float32[{N}@i,4]"}
    assert json.loads(json.dumps(r.to_dict()))["vs_pmap"]["passed"]


def test_blocks_of_several_where_pmap_refuses_and_auto_types_without_sharding():
    p, r = _run("double", [(2 * N, 3)], SmapSettings(mode=AUTO))
    assert not p.ok and r.pmap_devices == 0 and r.vs_pmap is None and r.vs_vmap.passed
    assert [row["arrays"][0]["smap"]["index"] for row in r.rows[:2]] == ["[0:2, :]", "[2:4, :]"]
    assert all(row["arrays"][0]["pmap"] is None for row in r.rows)
    assert r.types["x"] == f"float32[{2 * N},3]"  # Auto: no sharding in the type


def test_a_broadcast_input_is_whole_on_every_device_and_a_tree_keeps_its_names():
    program = expr.program("x, p", "x @ p['w'] + p['b']")
    shapes = [(N, 3, 5), {"w": (5, 2), "b": (2,)}]
    p = plan(program, shapes, in_axes=(0, None), axis_name="i", n_devices=N)
    r = smaprun.run_here(program, p, SmapSettings())
    assert r.passed
    names = [a["name"] for a in r.rows[0]["arrays"]]
    assert names == ["x", "p['b']", "p['w']", "out"]
    w = r.rows[-1]["arrays"][2]
    assert w["smap"]["index"] == "[:, :]" and w["smap"]["shape"] == [5, 2]
    assert r.types["p['w']"] == "float32[5,2]"


def test_the_estimate_counts_the_inputs_three_times_and_the_outputs_four():
    program = functions.get("matmul")
    p = plan(program, [(N, 4, 5), (5, 2)], in_axes=(0, None), n_devices=N)
    pipe = smapcall.smap_pipeline(program, p, SmapSettings())
    need = smaprun.estimate(p, pipe)
    i, o = 4 * (N * 4 * 5 + 5 * 2), 4 * N * 4 * 2
    assert need.total == 3 * i + 4 * o + OVERHEAD and need.device == 2 * i + 3 * o
    with pytest.raises(ValueError):  # nothing to run when smap refuses
        refused = smapcall.smap_pipeline(program, p, SmapSettings(set_mesh=False))
        smaprun.run(program, p, SmapSettings(set_mesh=False), refused)


def test_your_own_f_runs_in_the_sandboxs_worker_and_gives_what_it_gives_here():
    from pmapviz.core.running import sandbox

    program = expr.program("x", "jnp.tanh(x) * 2")
    p = plan(program, [(N, 3)], n_devices=N)
    pipe = smapcall.smap_pipeline(program, p, SmapSettings())
    try:
        there = smaprun.run(program, p, SmapSettings(), pipe)
        assert sandbox._WORKER.alive()  # it ran there
    finally:
        sandbox._WORKER.stop()
    here = smaprun.run_here(program, p, SmapSettings())
    assert there.passed and there.to_dict() == here.to_dict()


# ---------------------------------------------------------------- every preset, every count
def check_presets(n: int, page=None, skip: tuple[str, ...] = ()) -> list[dict]:
    """Every preset on this process's ``n`` devices (but ``skip``): smap's comparison, and
    where smap refuses, ``page(query, refusal)`` (the explorer in AppTest: JAX's words shown,
    the fix pressed, the run it makes): one record per preset."""
    found = []
    for preset in [p for p in presets.PRESETS if p.key not in skip]:
        program, p, errors = preset.scenario(n).plan(n)
        c = smapcompare.compare(program, p, SmapSettings())
        record = {"preset": preset.key, "plan_ok": p.ok, "smap": None, "page": None}
        if c.run is not None:
            record["smap"] = {
                "vs_pmap": None if c.run.vs_pmap is None else c.run.vs_pmap.passed,
                "vs_vmap": c.run.vs_vmap.passed,
                "part": None if c.part is None else c.part.code,
            }
        elif c.refusal is not None:
            record["refusal"] = c.refusal.code
            if page is not None:
                record["page"] = page(preset.scenario(n).query(), c.refusal)
        found.append(record)
    return found


def assert_presets(found: list[dict], n: int) -> None:
    assert [r["preset"] for r in found] == [p.key for p in presets.PRESETS], found
    for r in found:
        where = f"{r['preset']} on {n} devices: {r}"
        if r["smap"] is not None:  # smap ran: it equals jit(vmap), and pmap where pmap runs
            assert r["smap"]["vs_vmap"] and r["smap"]["part"] is None, where
            assert r["smap"]["vs_pmap"] is (True if r["plan_ok"] else None), where
        else:  # smap refused: the page showed JAX's words, and its fix ran
            assert r.get("refusal") and r["page"] == {"said": True, "fixed": True}, where


def page_check(walker, n: int):
    """The explorer page for a refusal: JAX's own words shown, its fix pressed, a run."""
    from pmapviz.core.base.pageinfo import page_file
    from pmapviz.features.smap.ui.smap_view import OPEN_KEY

    def check(query: dict, refusal) -> dict:
        at = walker.open(page_file("explorer"), query)
        at.session_state[OPEN_KEY] = True
        at.run()
        said = any(refusal.said.text in str(c.value) for c in at.code)
        at.button(key=f"ex_smap_fix_{refusal.code}").click().run()
        if not any("smap equals" in str(s.value) for s in at.success):  # large: its button
            at.button(key="ex_smap_run").click().run()
        fixed = any("smap equals" in str(s.value) for s in at.success) and not at.exception
        return {"said": said, "fixed": fixed}

    return check


def test_every_preset_but_the_seeds_on_this_process():
    """Every run, on this process's devices: the presets without the seed's 10M pairs (the
    walks below run them all, on 1, 2, 3, 5 and 8 devices, refusals through the page)."""
    found = check_presets(N, skip=("seed", "seed_noreshape"))
    assert [r["refusal"] for r in found if r["smap"] is None] == ["out_axes_none"]  # the lesson
    for r in found:
        if r["smap"] is not None:
            assert r["smap"]["vs_vmap"] and r["smap"]["part"] is None, r
            assert r["smap"]["vs_pmap"] is (True if r["plan_ok"] else None), r


# a long walk per count (tests/rotation.py): the every-run test above and tests/features/smap/ui
@pytest.mark.timeout(600)
@pytest.mark.parametrize(
    "count", [pytest.param(c, marks=pytest.mark.rotates(cpu_s=12)) for c in (1, 2, 3, 5, 8)]
)
def test_every_preset_on_this_many_devices(count):
    from tests.pages.test_every_device_count import fresh_process

    result, took = fresh_process(Path(__file__).resolve(), count, 500)
    print(f"{count} device(s): {took:.0f} s")
    assert result["devices"] == count
    assert_presets(result["presets"], count)


# ---------------------------------------------------------------- random planner cases
BODIES = {
    "double": ("x", "x * 2"),
    "add": ("x, y", "x + y"),
    "sum": ("x", "jnp.sum(x)"),
    "transpose": ("x", "jnp.transpose(x)"),
    "first": ("x", "x[0]"),
    "matmul": ("x, y", "x @ y"),
    "psum": ("x", "lax.psum(x, 'i')"),
    "psum_total": ("x", "lax.psum(jnp.sum(x), 'i')"),
    "pair": ("x, y", "(x * 2, jnp.sum(y))"),
    "dict": ("x, y", "{'sum': x + y, 'total': lax.psum(jnp.sum(x), 'i')}"),
}
DTYPES = ("float32", "int32", "bfloat16", "float16", "int8", "bool")


@st.composite
def cases(draw):
    """As tests/core/planning/test_planning.py draws them (ranks, sizes, axes of every kind,
    out_axes, dtypes, 1 to 8 devices), f one of its functions typed as your own f; mapped
    sizes usually one the devices take, sometimes up to twice the devices. No empty axes: smap
    is not called with them (smaprefusals.callable_with), as the plan refuses them."""
    name = draw(st.sampled_from(sorted(BODIES)))
    n = draw(st.integers(1, N))
    n_args = len(BODIES[name][0].split(","))
    shapes = [
        [draw(st.integers(1, 9)) for _ in range(draw(st.sampled_from([0, 1, 1, 2, 2, 3, 3])))]
        for _ in range(n_args)
    ]
    in_axes = []
    for s in shapes:
        kind = draw(st.integers(0, 9))
        if kind <= 6 and s:
            in_axes.append(draw(st.integers(-len(s), len(s) - 1)))
        else:
            in_axes.append(None if kind <= 7 else draw(st.integers(-4, 4)))
    if draw(st.integers(0, 3)):
        m = draw(st.sampled_from([n, n, draw(st.integers(1, 2 * n))]))
        for s, a in zip(shapes, in_axes, strict=True):
            if a is not None and -len(s) <= a < len(s):
                s[a] = m
    out_axes = draw(st.one_of(st.just(0), st.none(), st.integers(-3, 3)))
    dtype = draw(st.sampled_from(DTYPES))
    return name, [tuple(s) for s in shapes], tuple(in_axes), out_axes, n, dtype


def _apply(case: tuple, changes: dict) -> tuple:
    """A case with a fix's changes to the explorer's settings applied (as its page would)."""
    name, shapes, in_axes, out_axes, n, dtype = case
    shapes, in_axes = list(shapes), list(in_axes)
    for key, text in changes.items():
        if key == "out":
            out_axes = pytrees.parse_axis_tree(text)
        elif key[0] == "s":
            shapes[int(key[1:])] = pytrees.parse_shape_tree(text)
        else:
            in_axes[int(key[1:])] = pytrees.parse_axis_tree(text)
    return name, shapes, tuple(in_axes), out_axes, n, dtype


def check_case(case: tuple) -> str:
    """One case: where smap runs, it equals jit(vmap), and pmap where the plan is valid (or the
    part it shows is measured); where it refuses, the refusal is explained and its fix,
    applied (again if the fixed settings meet the next refusal), runs, unless f itself
    refuses the settings. Returns what happened (for hypothesis' statistics)."""
    s = SmapSettings()
    for _ in range(5):
        name, shapes, in_axes, out_axes, n, dtype = case
        program = expr.program(*BODIES[name])
        p = plan(program, shapes, in_axes, out_axes, "i", n, [dtype] * len(shapes))
        if not smaprefusals.callable_with(p):
            return "not callable"
        c = smapcompare.compare(program, p, s)
        r = c.refusal
        if c.run is not None:
            if c.part is not None:  # measured: they part
                assert not c.run.passed or c.part.code == "collective_over_blocks", case
                return f"ran, parts: {c.part.code}"
            assert c.run.vs_vmap.passed, (case, c.run.vs_vmap)
            assert c.run.vs_pmap is None or c.run.vs_pmap.passed, (case, c.run.vs_pmap)
            return "ran and agrees" + (" with pmap" if c.run.vs_pmap else "")
        assert r is not None and r.code != "other", (case, c.smap.refused)
        assert r.said.asked and r.said.text and r.message and r.fix
        if not r.fixable:
            assert r.code == "f_refuses", (case, r.code)
            return "f refuses"
        case, s = _apply(case, r.explorer), s.changed(r.changes)
    raise AssertionError(f"{case}: still refused after 5 fixes")


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_random_planner_cases_quick(case):
    """Every run: 20 random cases (the walk below: 200)."""
    event(check_case(case))


@pytest.mark.rotates(cpu_s=30)  # a long walk (tests/rotation.py): the quick test above
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_200_random_planner_cases(case):
    event(check_case(case))


if __name__ == "__main__":  # the walker: python tests/features/smap/test_smaprun.py COUNT
    sys.path.insert(0, str(ROOT))
    from tests.pages.test_every_device_count import MARK, start_walker

    count = int(sys.argv[1])
    walker = start_walker(count)
    from pmapviz.features.explorer import presets
    from pmapviz.features.smap import smapcompare
    from pmapviz.features.smap.smapsettings import SmapSettings

    found = check_presets(count, page_check(walker, count))
    import jax

    print(MARK + json.dumps({"devices": jax.device_count(), "presets": found}), flush=True)
