"""``pmapviz.pod_sweep``: a built-in program compiled for each v5e slice from 4 to 16 chips as a
notebook view with a row per slice, and every refusal a ValueError that says what to give."""

import pytest

from pmapviz.core.pods import podprograms, podsweep
from pmapviz.features.pods import podsettings
from pmapviz.features.pods.showpod import pod_sweep


def test_a_psum_sweep_to_16_chips_has_a_row_per_slice():
    view = pod_sweep("psum", max_chips=16)
    names = podsweep.sizes("v5e", 4, 16)
    rows = view.to_dict()["rows"]
    assert [r["topology"] for r in rows] == list(names) == ["v5e:2x2", "v5e:2x4", "v5e:4x4"]
    assert [r["chips"] for r in rows] == [4, 8, 16]
    assert rows[0]["speed-up"] == "1.00x"
    assert all(r["memory"].startswith("fits") for r in rows)
    reports = view.to_dict()["reports"]
    assert [r["program"] for r in reports] == ["psum"] * 3
    assert view.title == f"{podprograms.psum().label}: one step from 4 to 16 chips"
    assert len(view.text.splitlines()) == 3
    assert "<table" in view.html()


def test_an_unknown_program_name_is_refused_naming_the_choices():
    with pytest.raises(ValueError) as err:
        pod_sweep("nope")
    message = str(err.value)
    assert "program='nope'" in message
    assert all(name in message for name in podsettings.PROGRAMS)
    assert "a function and its arguments" in message


def test_a_function_without_arguments_is_refused_before_any_compile():
    with pytest.raises(ValueError, match="no arguments"):
        pod_sweep(lambda x: x)


def test_a_range_without_a_slice_is_refused():
    with pytest.raises(ValueError, match="no v6e slice offered between 300 and 400 chips"):
        pod_sweep("psum", generation="v6e", min_chips=300, max_chips=400)


def test_a_jitted_f_is_swept_with_its_in_specs_on_every_slice():
    import jax
    import jax.numpy as jnp
    from jax.sharding import PartitionSpec as P

    x = jax.ShapeDtypeStruct((64, 32), jnp.float32)
    view = pod_sweep(jax.jit(lambda x: x.sum()), x, max_chips=8, in_specs=(P("i"),))
    reports = view.to_dict()["reports"]
    assert [r["topology"] for r in reports] == ["v5e:2x2", "v5e:2x4"]
    # the batch of 64 rows split over every chip of each slice: as given, nothing changed
    assert [r["inputs"][0]["block"] for r in reports] == [[16, 32], [8, 32]]
    assert all(r["changes"] == [] and r["notes"] == [] for r in reports)


def test_slices_sweeps_the_training_step_over_slices_with_the_dcn_model():
    view = pod_sweep("train", slices=[1, 2], slice_topology="v5e:2x4")
    rows = view.to_dict()["rows"]
    assert [r["topology"] for r in rows] == ["v5e:2x4", "2 x v5e:2x4"]
    assert rows[0]["dcn_bytes"] == 0 and rows[1]["dcn_bytes"] > 0
    assert [r["slices"] for r in view.to_dict()["reports"]] == [1, 2]
    said = view.to_dict()["said"]
    assert said[-1].startswith("DCN time is a model") and all(s in view.text for s in said)
    assert view.title.endswith("on 1 to 2 slices of v5e:2x4")


@pytest.mark.parametrize("slices", [[1, 99], [0], [], ["2"]])
def test_bad_slice_counts_are_refused_with_the_bounds(slices):
    with pytest.raises(ValueError, match="slices"):
        pod_sweep("train", slices=slices)


def test_slices_refuses_a_function_in_one_line():
    with pytest.raises(ValueError, match="built-in program"):
        pod_sweep(lambda x: x, 1, slices=[1, 2])
