"""The comparison as data and text: what ``pmapviz plan --smap`` prints and ``pmapviz.smap``
draws, JSON-ready."""

from __future__ import annotations

import json

from pmapviz.core.expressions import functions
from pmapviz.core.planning.planning import plan
from pmapviz.features.smap import smapcompare
from pmapviz.features.smap.smapsettings import SmapSettings
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_a_run_as_data_and_as_text():
    program = functions.get("double")
    c = smapcompare.compare(program, plan(program, [(N, 3)], n_devices=N))
    assert c.ok
    data = json.loads(json.dumps(c.to_dict()))
    assert data["pmap_pipeline"]["stages"][0]["kind"] == "jit" and data["refusal"] is None
    assert data["run"]["vs_pmap"]["passed"] and data["run"]["vs_vmap"]["passed"]
    lines = smapcompare.text(c)
    assert lines[0] == "pmap as JAX runs it (its jaxpr):"
    assert any(line.startswith("  [squeeze] squeeze x: dimensions=(0,)") for line in lines)
    assert "  smap equals pmap element by element (largest difference 0)" in lines
    assert f"  x: float32[{N}@i,3]" in lines


def test_a_refusal_as_data_and_text_and_nothing_run():
    program = functions.get("double")
    c = smapcompare.compare(
        program, plan(program, [(N, 3)], n_devices=N), SmapSettings(reshard=False)
    )
    assert not c.ok and c.run is None and c.not_run == "smap refuses these settings"
    data = c.to_dict()
    assert data["refusal"]["code"] == "not_resharded" and data["refusal"]["changes"] == {
        "reshard": True
    }
    text = "\n".join(smapcompare.text(c))
    assert "smap refuses [not_resharded]" in text and "JAX says: ValueError: in_specs" in text


def test_run_false_traces_only():
    program = functions.get("double")
    c = smapcompare.compare(program, plan(program, [(N, 3)], n_devices=N), run=False)
    assert c.run is None and c.refusal is None and c.not_run == "not run (run=False)"
    assert c.smap.kinds[0] == "reshard"
