"""Each of smap's refusals: read from the real call (abstract inputs), explained in the user's
numbers with JAX's own words, and a fix that, applied (to smap's settings or the explorer's),
runs and agrees with pmap and jit(vmap)."""

from __future__ import annotations

import pytest

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.smap import smapcompare, smaprefusals
from pmapviz.features.smap.smapsettings import AUTO, SmapSettings
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def _plan(texts: dict):
    program, p, errors = Scenario.from_texts(texts, N).plan(N)
    assert not errors, errors
    return program, p


def _fixed(texts: dict, s: SmapSettings, refusal) -> tuple:
    """The settings with the refusal's fix applied, as its button applies it."""
    texts = {**texts, **refusal.explorer}
    return texts, s.changed(refusal.changes)


# explorer texts, smap settings, the refusal, a fragment of JAX's words, a number it states
CASES = [
    (
        {"fn": "double", "s0": f"{N}, 4"},
        SmapSettings(set_mesh=False),
        "no_mesh",
        "not under a mesh context",
        "",
    ),
    (
        {"fn": "double", "s0": f"{N}, 4"},
        SmapSettings(set_mesh=False, reshard=False),
        "no_mesh",
        "The context mesh cannot be empty",
        "",
    ),
    (
        {"fn": "add", "s0": f"3, {N}", "s1": f"3, {N}", "a0": "-1", "a1": "-1", "out": "1"},
        SmapSettings(),
        "negative_in_axes",
        "not evenly divisible",
        "in_axes=-1 for x (3, ",
    ),
    (
        {"fn": "double", "s0": "3, 4" if N % 3 else "5, 4"},
        SmapSettings(),
        "not_divisible",
        "does not evenly divide the dimension size",
        "has 3 elements" if N % 3 else "has 5 elements",
    ),
    (
        {"fn": "double", "s0": f"{N}, 4"},
        SmapSettings(mode=AUTO, in_axes=False),
        "auto_no_in_axes",
        "in_axes was not specified",
        "",
    ),
    (
        {"fn": "double", "s0": f"{N}, 4"},
        SmapSettings(reshard=False),
        "not_resharded",
        "does not match the specs of the input",
        f"x ({N}, 4) is a plain array",
    ),
    (
        {"fn": "add", "s0": f"{N}, 3", "s1": f"{2 * N}, 3"},
        SmapSettings(),
        "sizes_differ",
        "inconsistent sizes",
        f"x {N}, y {2 * N}",
    ),
    (
        {"fn": "double", "s0": f"{N}, 4", "out": "None"},
        SmapSettings(),
        "out_axes_none",
        "out_specs which require replication",
        "",
    ),
]


@pytest.mark.parametrize("texts, s, code, said, numbers", CASES, ids=[c[2] for c in CASES])
def test_a_refusal_is_explained_with_jaxs_words_and_its_fix_runs(texts, s, code, said, numbers):
    program, p = _plan(texts)
    c = smapcompare.compare(program, p, s)
    r = c.refusal
    assert r is not None and r.code == code, (r and r.code, c.smap.refused)
    assert said in r.said.message and r.said.text.startswith(r.said.error_type)
    assert numbers in r.message and r.fixable and c.run is None
    assert r.to_dict()["jax_says"] == r.said.text
    texts, s = _fixed(texts, s, r)
    program, p = _plan(texts)
    again = smapcompare.compare(program, p, s)
    while again.refusal is not None and again.refusal.fixable:  # a fix may meet the next one
        texts, s = _fixed(texts, s, again.refusal)
        program, p = _plan(texts)
        again = smapcompare.compare(program, p, s)
    assert again.refusal is None and again.run is not None and again.ok, again.to_dict()
    assert (again.run.vs_pmap is not None) == p.ok


def test_blocks_of_several_and_out_axes_none_are_fixed_by_a_mesh_of_one_element_each():
    program, p = _plan({"fn": "global_sum", "s0": f"{N}, 4"})
    s = SmapSettings(mesh_devices=N // 2 if N % 2 == 0 else 1)
    r = smapcompare.compare(program, p, s).refusal
    if N == 1:  # one device: blocks of one already, nothing refused
        assert r is None
        return
    assert r.code == "out_axes_none" and r.changes == {"mesh_devices": N}
    assert "vmap out_axes, got axis spec None" in r.said.message
    assert smapcompare.compare(program, p, s.changed(r.changes)).ok


def test_settings_f_itself_refuses_are_no_part_between_smap_and_pmap():
    program, p = _plan({"fn": "matmul", "s0": f"{N}, 3", "s1": "5, 2", "a1": "None"})
    assert not p.ok  # (3,) @ (5, 2): f refuses, whatever maps it
    c = smapcompare.compare(program, p, SmapSettings())
    assert c.refusal.code == "f_refuses" and "jit(vmap) of f refuses them too" in c.refusal.message
    assert c.pmap.refused is not None  # pmap refuses it too


def test_callable_with_and_the_largest_mesh_that_divides():
    assert not smaprefusals.callable_with(None)
    assert not smaprefusals.callable_with(_plan({"fn": "double", "s0": "8, 4", "a0": "2"})[1])
    assert smaprefusals.callable_with(_plan({"fn": "double", "s0": f"{3 * N}, 4"})[1])
    assert smaprefusals.largest_divisor(10_000_000, 3) == 2
    assert smaprefusals.largest_divisor(12, 8) == 6 and smaprefusals.largest_divisor(7, 5) == 1
