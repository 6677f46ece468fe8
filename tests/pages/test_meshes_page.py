"""AppTest for the Meshes page: placements drawn from JAX, problems with fixes, links."""

import pytest

from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.pods import podtarget, podtopology
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text

PAGE = page_file("meshes")


def _grids(at) -> list[str]:
    return [m.value for m in at.markdown if "role='img'" in m.value]


def test_the_default_mesh_places_each_argument(run_app):
    at = run_app(page=PAGE)
    assert not at.exception, [e.value for e in at.exception]
    text = all_text(at)
    assert f"x: ({4 * 2}, 16) P('data', None)" in text  # 2x4 for 8 devices
    assert "Each device holds (4, 16); replicated over model." in text
    first = _grids(at)[0]
    assert "aria-label='x (8, 16) placed by P(&#x27;data&#x27;, None)" in first
    assert "device 5" in first and "[4:8, 0:16]" in first  # data=1, model=1 holds rows 4:8
    assert at.query_params["mesh"] == "2x4" and at.query_params["p0"] == "P('data', None)"


def test_a_spec_jax_refuses_shows_the_problem_and_its_fix(run_app):
    at = run_app(page=PAGE)
    at.text_input(key="me_s0").set_value("6, 16").run()
    at.text_input(key="me_p0").set_value("P('model', None)").run()
    assert not at.exception
    (err,) = at.error
    assert "4 does not divide 6" in err.value and "**Fix:** Make dimension 0 a multiple of 4" in (
        err.value
    )
    at.text_input(key="me_p0").set_value("P('data'").run()
    assert any("write it like P('data', None)" in e.value for e in at.error)


def test_a_link_opens_a_bigger_mesh_planned_from_shapes(run_app):
    at = run_app(
        page=PAGE,
        query={"mesh": f"2x{TEST_DEVICES}", "s0": "4, 32", "p0": "data, model", "s1": "", "s2": ""},
    )
    assert not at.exception
    text = all_text(at)
    assert "planned from shapes alone" in text and "Each device holds (2, 4)" in text
    assert f"device {2 * TEST_DEVICES - 1}" in _grids(at)[0]


def test_hostile_link_values_fall_back_with_a_note(run_app):
    at = run_app(page=PAGE, query={"mesh": "9" * 30, "p0": "P(__import__('os'))", "names": "a,a"})
    assert not at.exception
    notes = " ".join(w.value for w in at.warning)
    assert "mesh=" in notes and "p0=" in notes
    assert "Each device holds (4, 16)" in all_text(at)  # the defaults, drawn


def test_names_that_do_not_fit_the_mesh_are_said_not_crashed(run_app):
    at = run_app(page=PAGE)
    at.text_input(key="me_names").set_value("data").run()
    assert not at.exception
    (err,) = at.error
    assert "names 1 axes; the mesh has 2" in err.value and "unexpected" not in err.value


def test_your_own_f_is_checked_on_the_page_and_its_settings_are_in_the_link(run_app):
    at = run_app(page=PAGE, query={"lf": "x @ w", "out": "P('data', 'model')"})
    assert not at.exception and not at.error
    assert "Your own f, both ways" in [s.value for s in at.subheader]
    assert "varying over data, model" in all_text(at)
    assert at.query_params["lf"] == "x @ w" and at.query_params["out"] == "P('data', 'model')"
    at.text_input(key="me_out").set_value("P('data')").run()
    assert any("same on every device along `model`" in e.value for e in at.error)
    assert at.query_params["out"] == "P('data')"  # the link keeps what was typed


# libtpu takes a lockfile per machine: the suite's other workers (and a running server) load it too
SHARED_LIBTPU = {"ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


@pytest.mark.skipif(
    not podtopology.availability().ok, reason="compiling for a TPU slice needs libtpu"
)
def test_your_f_on_a_tpu_slice_and_a_slice_the_mesh_does_not_fit(run_app):
    # the default mesh, 2x4: 8 devices, as v5e:2x4 has; v5e:4x4's 16 do not fit it
    at = run_app(page=PAGE, query={"pod": "v5e:2x4"}, env=SHARED_LIBTPU)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert "Your f on a TPU slice" in [s.value for s in at.subheader]
    assert any("v5e:2x4: 8 chips on 2 hosts" in m.value for m in at.markdown)
    metrics = {m.label: m.value for m in at.metric}
    for label in ("Peak per device", "Compute + HBM", "Communication", "Collectives"):
        assert metrics[label], label
    at.selectbox(key="me_pod").set_value("v5e:4x4").run()
    assert not at.exception and not at.error and not at.metric
    assert any("has 8 devices and v5e:4x4 has 16" in i.value for i in at.info)
    assert at.query_params["pod"] == "v5e:4x4"


@pytest.mark.skipif(
    not podtopology.availability().ok, reason="compiling for a TPU slice needs libtpu"
)
def test_your_f_on_two_slices_from_a_link_and_a_hostile_slice_count(run_app):
    """Issue 66: ``pod=2 x v5e:2x4`` lays the default 2x4 mesh on each slice, 'dcn' = 2 added
    outermost (the note names the mesh compiled); ``pod=99x v5e:16x16`` is one warning and
    this machine."""
    at = run_app(page=PAGE, query={"pod": "2 x v5e:2x4"}, env=SHARED_LIBTPU)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error, [e.value for e in at.error]
    assert any("2 slices" in m.value for m in at.markdown)
    assert "('dcn', 'data', 'model') = 2 x 2 x 4" in all_text(at)
    assert {m.label: m.value for m in at.metric}["Collectives"]
    (picker,) = [s for s in at.selectbox if s.key.endswith("pod")]  # offered, not only linked
    assert {picker.format_func(t) for t in podtarget.MULTISLICE} <= set(picker.options)
    at = run_app(page=PAGE, query={"pod": "99x v5e:16x16"}, env=SHARED_LIBTPU)
    assert not at.exception and not at.error and not at.metric
    assert any("pod=" in w.value and "Using the default" in w.value for w in at.warning)


def _types_table(at):
    return next(t.value for t in at.table if "PartitionSpec" in t.value.columns)


def test_axis_types_from_a_link_give_jaxs_types_and_the_constructors_trap(run_app):
    import jax
    import numpy as np
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    at = run_app(page=PAGE, query={"t0": "auto", "t1": "explicit"})
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.selectbox(key="me_t0").value == "auto" and at.query_params["t0"] == "auto"
    table = _types_table(at)
    m = jax.make_mesh(
        (2, 4),
        ("data", "model"),
        devices=jax.devices()[:8],
        axis_types=(AxisType.Auto, AxisType.Explicit),
    )
    w = jax.device_put(np.zeros((16, 16), np.float32), NamedSharding(m, P(None, "model")))
    assert list(table["your axis types (Auto, Explicit)"])[1] == str(jax.typeof(w))
    assert list(table["jax.make_mesh's default"])[0] == "float32[8@data,16]"
    assert list(table["Mesh(...)'s default"])[0] == "float32[8,16]"
    assert any("does not match the specs of the input" in c.value for c in at.code)
    at.selectbox(key="me_t1").set_value("manual").run()
    assert not at.exception and at.query_params["t1"] == "manual"
    assert "each device, inside shard_map over 'model'" in _types_table(at).columns


def test_a_bad_axis_type_in_a_link_gets_one_line_and_the_default(run_app):
    at = run_app(page=PAGE, query={"t0": "<b>bold</b>", "t1": "Explicit!"})
    assert not at.exception and not at.error
    notes = [w.value for w in at.warning if "t0=" in w.value or "t1=" in w.value]
    assert len(notes) == 2 and all("Using the default, `explicit`." in n for n in notes)
    assert "`<b>bold</b>`" in notes[0]  # the text as a code span: no markup
    assert "your axis types (Explicit, Explicit)" in _types_table(at).columns
