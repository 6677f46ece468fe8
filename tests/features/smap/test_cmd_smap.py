"""``pmapviz plan --smap``: the plan, then pmap's pipeline and smap beside it, as text or JSON;
the exit status is smap's (0: it runs and agrees). Without --smap, the plan command as it was."""

from __future__ import annotations

import json

from tests.app.test_cli import run_cli


def test_plan_smap_json_runs_what_pmap_refuses():
    r = run_cli("plan", "--devices", "8", "--fn", "double", "--shape", "16,3", "--smap", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert not out["plan"]["ok"] and out["smap"]["ok"]
    assert "cannot select an axis to squeeze out" in out["smap"]["pmap_pipeline"]["refused"]
    assert out["smap"]["run"]["block"] == 2 and out["smap"]["run"]["vs_vmap"]["passed"]


def test_plan_smap_text_shows_the_refusal_and_its_fix_with_exit_1():
    r = run_cli(
        "plan",
        "--devices",
        "8",
        "--fn",
        "double",
        "--shape",
        "8,3",
        "--smap",
        "--smap-mode",
        "Auto",
        "--smap-leave-out",
        "in_axes",
    )
    assert r.returncode == 1, r.stderr
    assert "[jit] jit: name=_fun f32[8,3] -> f32[8,3]" in r.stdout
    assert "smap refuses [auto_no_in_axes]" in r.stdout
    assert "JAX says: TypeError: in_axes was not specified" in r.stdout


def test_plan_without_smap_is_the_plan_and_bad_smap_flags_are_one_line():
    r = run_cli("plan", "--devices", "8", "--fn", "double", "--shape", "8,3", "--json")
    assert r.returncode == 0 and "smap" not in json.loads(r.stdout)
    bad = run_cli("plan", "--devices", "8", "--fn", "double", "--smap", "--smap-mesh", "99")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1
    assert "--smap-mesh" in bad.stderr
