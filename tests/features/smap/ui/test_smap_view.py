"""The explorer's smap section: closed, nothing but its header; open, pmap's pipeline from its
jaxpr, the smap call, a run of smap beside pmap and jit(vmap) with each device's block, and
where smap refuses, the plain words, JAX's own (read from the real call) and a fix that,
applied, runs. Component tests (``render``) and the explorer page itself (AppTest)."""

from __future__ import annotations

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.explorer import presets
from pmapviz.features.smap.ui.smap_view import OPEN_KEY
from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render, texts

N = TEST_DEVICES


def _view(program, plan):
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.smap.ui import smap_view

    smap_view.show(program, plan, device_report())


def _settings(**changes):
    given = {"fn": "double", "s0": f"{N}, 4", **changes}
    program, plan, errors = Scenario.from_texts(given, N).plan(N)
    assert not errors, errors
    return program, plan


def _codes(at) -> str:
    return "\n".join(str(c.value) for c in at.code)


def _html(at) -> str:
    return "\n".join(h.proto.body for h in at.get("html"))


def test_closed_it_draws_only_its_header():
    at = render(_view, *_settings())
    assert not at.exception and len(at.expander) == 1
    assert not at.code and not at.button and not at.get("html")


def test_settings_smap_cannot_take_draw_nothing():
    program, plan = _settings(s0="8, 4", a0="5")  # axis 5 of a rank-2 array
    at = render(_view, program, plan, state={OPEN_KEY: True})
    assert not at.exception and not at.expander


def test_open_it_draws_pmaps_pipeline_runs_smap_and_checks_it():
    at = render(_view, *_settings(fn="normalise", name="i"), state={OPEN_KEY: True})
    assert not at.exception, at.exception
    body = _html(at)
    for primitive in ("jit", "shard_map", "squeeze", "psum", "broadcast_in_dim", "reshard"):
        assert f">{primitive}<" in body or f"<b>{primitive}</b>" in body, primitive
    assert f"f32[{N},4]" in body and "f32[1,4]" in body  # pmap's types, as JAX prints them
    assert f"f32[{N}@i,4]" in body and "{V:i}" in body  # smap's: split, and varying
    assert "jax.smap(f_block, in_axes=(0,), out_axes=0, axis_name='i')(x)" in _codes(at)
    assert "x = jax.reshard(x, P('i'))" in _codes(at)
    ok = at.success[0].value
    assert "smap equals pmap element by element" in ok and "equals jit(vmap)" in ok
    assert f"x: float32[{N}@i,4]" in _codes(at)  # jax.typeof, read from the run's arrays


@pytest.mark.parametrize(
    "unticked, code, words",
    [
        ("setmesh", "no_mesh", "not under a mesh context"),
        ("reshard", "not_resharded", "does not match the specs of the input"),
    ],
)
def test_a_call_left_without_a_part_shows_jaxs_refusal_and_its_fix_runs(unticked, code, words):
    at = render(_view, *_settings(), state={OPEN_KEY: True, f"sm_{unticked}": False})
    assert not at.exception, at.exception
    assert not at.success  # refused: nothing ran
    assert words in _codes(at)  # JAX's own words, folded after the plain ones
    at.button(key=f"ex_smap_fix_{code}").click().run()
    assert not at.exception and at.session_state[f"sm_{unticked}"] is True
    assert "smap equals pmap element by element" in at.success[0].value


def test_auto_axes_without_in_axes_is_refused_with_jaxs_type_error_and_fixed():
    at = render(_view, *_settings(), state={OPEN_KEY: True, "sm_mode": "Auto", "sm_inaxes": False})
    assert "TypeError: in_axes was not specified" in _codes(at)
    at.button(key="ex_smap_fix_auto_no_in_axes").click().run()
    assert not at.exception and "smap equals pmap" in at.success[0].value
    assert f"x: float32[{N},4]" in _codes(at)  # Auto: the types carry no sharding


def test_a_mapped_axis_the_mesh_does_not_divide_is_refused_and_the_fix_shrinks_the_mesh():
    """4 on 8: pmap runs on 4 devices, smap on a mesh of 8 refuses; the fix: a mesh of 4."""
    at = render(_view, *_settings(s0="4, 3"), state={OPEN_KEY: True})
    assert "does not evenly divide the dimension size 4" in _codes(at)
    assert "A mesh of 4 devices" in texts(at)
    at.button(key="ex_smap_fix_not_divisible").click().run()
    assert not at.exception and at.session_state["sm_mesh"] == 4
    assert "smap equals pmap element by element" in at.success[0].value


def test_pmap_refuses_a_larger_axis_that_smap_runs_in_blocks():
    program, plan = _settings(s0=f"{2 * N}, 3")
    assert not plan.ok  # pmap's plan refuses it; smap runs it, blocks of 2
    at = render(_view, program, plan, state={OPEN_KEY: True})
    assert not at.exception
    assert "cannot select an axis to squeeze out" in _codes(at)  # JAX's words for pmap
    assert "a block of 2" in texts(at)
    assert "smap equals jit(vmap) element by element" in at.success[0].value


def test_your_own_f_with_a_dict_argument_runs_in_its_own_process():
    from pmapviz.core.running import sandbox

    given = {
        "fn": "expr",
        "args": "x, p",
        "body": "jnp.tanh(x @ p['w'] + p['b'])",
        "s0": f"{N}, 3, 5",
        "s1": "{'w': (5, 2), 'b': (2,)}",
        "a1": "None",
    }
    try:
        at = render(_view, *_settings(**given), state={OPEN_KEY: True})
        assert not at.exception, at.exception
        assert "smap equals pmap element by element" in at.success[0].value
        assert "ran in a process of its own" in texts(at)
        assert "p['w']: float32[5,2]" in _codes(at) and f"x: float32[{N}@i,3,5]" in _codes(at)
    finally:
        sandbox._WORKER.stop()


# ---------------------------------------------------------------- the explorer page itself
def _page(monkeypatch, query: dict):
    from tests.pages.conftest import open_link

    at = open_link(monkeypatch, page_file("explorer"), query)
    at.session_state[OPEN_KEY] = True
    return at.run()


def test_the_page_shows_the_section_after_open_as_shard_map(monkeypatch):
    at = _page(monkeypatch, {})
    assert not at.exception
    labels = [e.label for e in at.expander]  # after "Open as shard_map" and what it draws
    assert labels.index("pmap as JAX runs it, and jax.smap beside it") > labels.index(
        "Open as shard_map: these settings in today's API"
    )
    run = at.button(key="ex_smap_run")  # the seed's 10M pairs: large, so it waits for its button
    assert run.label.startswith("Run smap, pmap and jit(vmap) (") and "at the peak" in run.label
    at = _page(monkeypatch, presets.BY_KEY["psum"].scenario(N).query())
    assert "smap equals pmap element by element" in at.success[-1].value  # small: at once


def test_the_page_shows_smaps_refusal_of_the_out_axes_none_lesson_and_its_fix_runs(monkeypatch):
    """The preset's lesson: pmap's plan refuses out_axes=None for a varying output; smap
    refuses it in JAX's own words, and the fix (out_axes=0) makes both run."""
    query = presets.BY_KEY["outnone"].scenario(N).query()
    at = _page(monkeypatch, query)
    assert not at.exception
    assert "out_specs which require replication" in _codes(at)
    at.button(key="ex_smap_fix_out_axes_none").click().run()
    assert not at.exception
    assert "smap equals pmap element by element" in at.success[-1].value
