"""The typed program against the oracle (tests/features/types/types_oracle.py, which imports
nothing of pmapviz): every type the view shows is ``str()`` of the jaxpr's aval, every
collective is the compiled HLO's, for every case in three modes on 1, 3 and 8 devices; and the
view's own promises: one compile per mode, kept; JAX's refusal as the mode's answer."""

import json
import os
import subprocess
import sys
import time

import pytest

from pmapviz.features.types import typedcatalog, typedcompile, typedprogram
from tests.conftest import ROOT, TEST_DEVICES
from tests.features.types import types_oracle, types_walker

ORACLE = ROOT / "tests" / "features" / "types" / "types_oracle.py"
WALKER = ROOT / "tests" / "features" / "types" / "types_walker.py"
QUICK = ["both", "contract", "sum0", "gather", "ppermute", "two_outputs", "cond", "pytree"]
QUICK += ["loop", "unreduced", "scan", "layer_norm"]


def _run(script, count: int, names: list[str], mark: str) -> dict:
    """``python script count *names`` on ``count`` CPU devices of its own; its JSON."""
    env = {**os.environ, "PMAPVIZ_DEVICES": str(count), "JAX_PLATFORMS": "cpu"}
    env["PYTHONPATH"] = str(ROOT)
    env.pop("JAX_NUM_CPU_DEVICES", None)
    r = subprocess.run(
        [sys.executable, str(script), str(count), *names],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = [line for line in r.stdout.splitlines() if line.startswith(mark)]
    assert r.returncode == 0 and found, r.stderr[-3000:]
    return json.loads(found[-1][len(mark) :])


def _compare(expected: dict, shown: dict) -> int:
    """Every case and mode alike; returns how many modes showed a typed program."""
    assert set(shown) == set(expected)
    typed = 0
    for name, modes in expected.items():
        for mode, want in modes.items():
            got = dict(shown[name][mode])
            assert got.pop("all_shown"), (name, mode)  # every type is in the view's HTML
            where = f"{name} {mode}"
            assert got.get("error") == want.get("error"), where
            for key in ("in_types", "out_types", "rows"):
                assert got.get(key) == want.get(key), (where, key)
            if want.get("error") is None:
                assert sorted(map(str, got["collectives"])) == sorted(
                    map(str, want["collectives"])
                ), where
                typed += 1
    return typed


def test_every_type_shown_is_jax_s_own_and_every_collective_the_hlo_s():
    """A quick part of the oracle on this process's 8 devices: types, rows and collectives of
    a dozen cases (sharded matmuls, a reduction's all-reduce, every Manual collective, a
    Python loop at one source line, nested jaxprs, a pytree, unreduced) in three modes."""
    expected = _run(ORACLE, TEST_DEVICES, QUICK, types_oracle.MARK)
    shown = types_walker.typed_cases(TEST_DEVICES, QUICK)
    assert _compare(expected, shown) >= 28
    # the lessons in it, as JAX says them: Explicit refuses a sharded contraction ...
    assert expected["contract"]["explicit"]["error"] == "ShardingTypeError"
    assert expected["contract"]["auto"]["collectives"][0][:2] == ["all-reduce", "dot_general"]
    # ... and Explicit types carry the sharding, Manual's per-device types their variance
    both = dict(shown["both"]["explicit"])
    assert both["rows"][0][2] == [f"f32[{8 * 4}@data,{8 * 2}@model]"]
    assert any("{V:i}" in t for r in shown["gather"]["manual"]["rows"] for t in r[2])
    assert any("{U:data}" in t for r in shown["unreduced"]["explicit"]["rows"] for t in r[2])


# long walks (tests/rotation.py): every case, on 1, 3 and 8 devices, both sides in fresh
# processes; every run checks a dozen cases on 8 devices (above)
@pytest.mark.parametrize(
    "count", [pytest.param(c, marks=pytest.mark.rotates(cpu_s=9)) for c in (1, 3, 8)]
)
def test_every_case_in_every_mode_on_1_3_and_8_devices(count):
    expected = _run(ORACLE, count, [], types_oracle.MARK)
    shown = _run(WALKER, count, [], types_walker.MARK)
    assert len(expected) >= 30
    assert _compare(expected, shown) >= 90  # at least 30 programs x 3 modes typed


def test_each_mode_compiles_once_and_is_kept():
    typedprogram.forget()
    source = typedcatalog.named("meshes", TEST_DEVICES)
    t = time.perf_counter()
    first = typedprogram.typed(source, "manual")
    took = time.perf_counter() - t
    again = typedcatalog.named("meshes", TEST_DEVICES)  # the same settings, built anew
    t = time.perf_counter()
    assert typedprogram.typed(again, "manual") is first
    assert time.perf_counter() - t < took
    assert first.compile_s > 0 and first.error is None
    assert [c.kind for c in first.collectives] == ["all-gather"]
    assert typedprogram.typed(source, "explicit") is not first  # another mode: its own


def test_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(typedprogram, "KEEP", 2)
    typedprogram.forget()
    for name in ("double", "add", "matmul"):
        typedprogram.typed(typedcatalog.named(name, TEST_DEVICES), "explicit")
    assert len(typedprogram._KEPT) == 2


def test_jax_s_refusal_is_the_mode_s_answer_and_budgets_hold(monkeypatch):
    view = typedprogram.typed(typedcatalog.named("normalise", TEST_DEVICES), "explicit")
    # vmap's psum over a batch axis split under Explicit axes: JAX 0.10.2 cannot lower it
    assert view.error and view.stage == "compile" and view.rows  # traced: the types stand
    held = []
    real = typedcompile.memorypool.reserve

    def spy(need, label, *a, **k):
        held.append((need.total, label))
        return real(need, label, *a, **k)

    monkeypatch.setattr(typedcompile.memorypool, "reserve", spy)
    typedprogram.forget()
    typedprogram.typed(typedcatalog.named("seed", TEST_DEVICES), "auto")
    assert held == [(typedcompile.compile_need(1).total, "compiling a typed program")]
