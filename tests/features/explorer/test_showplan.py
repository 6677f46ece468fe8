"""pmapviz.features.explorer.showplan.plan: the explorer's plan as a notebook view, checked against
JAX's own
shardings and a real jax.pmap run."""

import re

import numpy as np
import pytest

from pmapviz.core.drawing import notebookviews
from pmapviz.core.expressions import functions
from pmapviz.core.planning import planning, pmapplacement
from pmapviz.features.explorer import showplan


def _is_picture(html: str) -> bool:
    return re.search(r"role=[\"']img[\"'] aria-label=", html) is not None


def test_a_catalog_name_plans_its_function_and_its_output_is_what_pmap_returns():
    import jax

    v = showplan.plan("vdot", [(8, 3), (8, 3)])
    assert isinstance(v, notebookviews.View) and v.ok and v.data["ok"]
    x = np.arange(24, dtype=np.float32).reshape(8, 3)
    real = jax.pmap(functions.get("vdot").build("i"), axis_name="i")(x, x)
    out = v.data["outputs"][0]
    assert tuple(out["shape"]) == real.shape and out["dtype"] == str(real.dtype)
    assert [a["per_device_shape"] for a in v.data["inputs"]] == [[3], [3]]
    assert "input x (8, 3) float32 split on axis 0 -> each device (3,)" in v.text
    assert "jax.pmap(f, in_axes=(0, 0), out_axes=0, axis_name='i')" in v.text
    assert "def f(x, y):" in v.html()  # a catalog example: the runnable script


def test_a_catalog_example_brings_its_own_shapes_and_axes():
    v = showplan.plan("matmul")  # the explorer's example, sized to this process's 8 devices
    example = functions.get("matmul")
    assert [tuple(a["shape"]) for a in v.data["inputs"]] == functions.sized_shapes(example, 8)
    assert tuple(v.in_axes_given) == example.default_in_axes  # the Plan, through the view


def test_the_readme_call_still_works_and_its_fix_comes_through_the_view():
    v = showplan.plan(functions.get("batched_dot"), [(10_000_000, 3)] * 2, n_devices=8)
    direct = planning.plan(functions.get("batched_dot"), [(10_000_000, 3)] * 2, n_devices=8)
    assert v.ok is False and v.problems == direct.problems
    assert v.problems[0].fix.startswith("Reshape x (10_000_000, 3) to (8, 1_250_000, 3)")


def test_unknown_names_list_the_catalog():
    with pytest.raises(ValueError, match="Unknown function 'dott'") as err:
        showplan.plan("dott", [(8, 3), (8, 3)])
    assert all(key in str(err.value) for key in functions.BY_KEY)
    assert "Did you mean" in str(err.value)


def test_dot_is_the_dot_of_two_vectors():
    v = showplan.plan("dot", [(8, 3), (8, 3)])
    assert v.ok and v.data["call"] == showplan.plan("vdot", [(8, 3), (8, 3)]).data["call"]
    assert v.to_frame().shape[0] == 8


def test_bad_settings_raise_value_errors_that_say_what_to_give():
    with pytest.raises(ValueError, match="disagree"):
        showplan.plan("vdot", [(8, 3)] * 2, devices=8, n_devices=4)
    with pytest.raises(ValueError, match="one shape per argument"):
        showplan.plan(lambda x: x, None)
    with pytest.raises(ValueError, match=r"\[\(8, 3\)\]"):
        showplan.plan(lambda x: x, (8, 3))
    with pytest.raises(ValueError, match="devices"):
        showplan.plan(lambda x: x, [(8, 3)], devices=0)
    with pytest.raises(ValueError, match="axis_name"):
        showplan.plan(lambda x: x, [(8, 3)], axis_name="not a name")


def test_each_row_holds_the_slice_jax_gives_that_device():
    v = showplan.plan(lambda x, w: x @ w, [(8, 4, 5), (5, 2)], in_axes=(0, None))
    rows = v.data["rows"]
    assert len(rows) == 8 == len(v.to_frame())
    for name, shape, axis in (("x", (8, 4, 5), 0), ("w", (5, 2), None)):
        sharding = pmapplacement.pmap_sharding(len(shape), axis, 8)
        where = sharding.devices_indices_map(shape)
        for row, device in zip(rows, sharding.mesh.devices.flat, strict=True):
            assert row["device"] == str(device)
            assert row[f"{name} slice"] == pmapplacement.index_text(tuple(where[device]))


def test_the_output_slices_are_the_shards_of_a_real_pmap():
    import jax

    v = showplan.plan(lambda x, y: x * y, [(8, 3), (8, 3)])
    x = np.ones((8, 3), np.float32)
    real = jax.pmap(lambda a, b: a * b)(x, x)
    held = {
        str(s.device): pmapplacement.index_text(tuple(s.index)) for s in real.addressable_shards
    }
    for row in v.data["rows"]:
        # pmap's shard index names the mapped axis only; the row writes every axis
        assert row["out slice"].startswith(held[row["device"]].rstrip("]"))


@pytest.mark.parametrize(
    "shapes, in_axes",
    [([(8, 3), (4, 3)], 0), ([(8, 3), (8, 3)], 2)],
    ids=["sizes differ", "axis out of range"],
)
def test_a_bad_plan_shows_each_problem_with_its_fix(shapes, in_axes):
    v = showplan.plan("vdot", shapes, in_axes=in_axes)
    direct = planning.plan(functions.get("vdot"), shapes, in_axes, axis_name="i", n_devices=8)
    assert v.ok is False and direct.problems
    html = v.html()
    assert html.count("role='alert'") == len(direct.problems) == len(v.data["problems"])
    assert html.count("<b>Fix:</b>") == len(direct.problems)
    for q in direct.problems:
        assert notebookviews.escape(q.fix) in html and f"fix: {q.fix}" in v.text
    assert v.data["rows"] == [] and v.to_frame().empty and "NOT OK" in str(v)


def test_planning_for_more_devices_than_this_process_has():
    v = showplan.plan(lambda x: x * 2, [(16, 3)], devices=16)
    assert v.ok and v.data["devices"] == 16 and v.data["planned_elsewhere"]
    assert "Planned for 16 devices" in v.text and "Planned for 16 devices" in v.html()
    assert len(v.to_frame()) == 16
    arithmetic = pmapplacement.pmap_indices(2, 0, 16)  # what JAX's sharding gives, tested there
    for k, row in enumerate(v.data["rows"]):
        assert row["device"] == f"device {k}"
        assert row["x slice"] == pmapplacement.index_text(arithmetic[k])


def test_the_html_is_self_contained_and_every_picture_is_labelled():
    html = showplan.plan("batched_dot").html()
    assert _is_picture(html) and "<script" not in html.lower()
    assert "http://" not in html and "https://" not in html
    pictures = re.findall(r"role=[\"']img[\"'] aria-label=[\"']([^\"']+)", html)
    assert len(pictures) == 3  # x, y and the output


def test_a_function_name_with_markup_is_shown_as_text():
    def f(x):
        return x * 2

    f.__name__ = "<img src=x onerror=alert(1)>"
    v = showplan.plan(f, [(8, 3)])
    html = v.html()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<img src=x onerror=alert(1)>" in str(v)  # the terminal form is plain text


def test_the_view_reads_through_to_the_plan():
    v = showplan.plan("global_sum")
    assert v.ok is True and v.devices_used == 8 and v.out_shapes == ()
    assert v.source.key == planning.replan(functions.get("global_sum"), v.key).key
    assert "out_axes=None is safe here" in v.text
    assert v.to_dict() == v.data and v.to_dict() is not v.data
