"""The schemas: a link's bad values fall back to defaults with a note, widget text parses to
typed values or one message per field, every page's fields, labels and bounds, and to_query
as from_query's inverse."""

import math

import pytest

from pmapviz.core.base import settings, valueparse
from pmapviz.core.planning import scenarios
from pmapviz.features.cluster import clustersettings
from pmapviz.features.collectives import collectivechoices
from pmapviz.features.timing import sweepsetup
from pmapviz.features.tour import toursteps
from pmapviz.features.training import trainingmodel


# ---------------------------------------------------------------- schemas: links and widgets
def test_from_query_replaces_bad_values_by_defaults_with_a_note():
    schema = collectivechoices.schema(8)
    texts, notes = schema.from_query({"n": "²", "m": str(2**70), "c": "pmean", "zzz": "1"})
    assert texts["n"] == "8" and texts["m"] == "8" and texts["c"] == "pmean"
    assert len(notes) == 2
    assert all("Using the default" in n for n in notes)
    assert any("`²`" in n for n in notes) and any("far too large" in n for n in notes)


def test_schema_parse_gives_typed_values_or_one_error_per_field():
    schema = trainingmodel.schema(8)
    values, errors = schema.parse({"batch": "256", "steps": "10", "lr": "0.1", "k": "8"})
    assert values["batch"] == 256 and values["steps"] == 10 and values["lr"] == 0.1
    assert not errors
    values, errors = schema.parse({"batch": "²", "steps": "0", "lr": "nan"})
    assert len(errors) == 3 and "batch" not in values


@pytest.mark.parametrize("n", [1, 3, 6, 8, 64])
def test_every_schema_default_parses(n):
    for schema in (
        scenarios.schema(n),
        collectivechoices.schema(n),
        trainingmodel.schema(n),
        clustersettings.schema(),
        toursteps.schema(),
        sweepsetup.schema(n, "dot"),
        sweepsetup.schema(n, "matmul"),
        sweepsetup.schema(n, "elementwise"),
    ):
        values, errors = schema.parse(schema.defaults())
        assert not errors, (n, errors)


@pytest.mark.parametrize("n", [3, 5, 6, 7, 8])
def test_timing_defaults_split_evenly_on_any_device_count(n):
    """The default sweep used to be refused on any count that is not a power of two."""
    from pmapviz.features.timing import sweepsetup, workloads

    schema = sweepsetup.schema(n, "dot")
    values, _ = schema.parse(schema.defaults())
    lcm = math.lcm(*values["ks"])
    assert all(s % lcm == 0 for s in values["sizes"])
    runs = sweepsetup.plan_sweep(
        workloads.WORKLOADS["dot"], values["sizes"], values["ks"], values["impls"], 2**34
    )
    assert len(runs) >= len(values["sizes"]) * len(values["ks"])


def test_explorer_schema_refuses_what_the_planner_would_and_keeps_what_it_accepts():
    schema = scenarios.schema(8)
    good = {"fn": "matmul", "s0": "8, 4, 5", "s1": "5, 2", "a0": "0", "a1": "None"}
    texts, notes = schema.from_query(good)
    assert not notes and texts["s1"] == "5, 2"
    texts, notes = schema.from_query({"s0": "8,²", "name": "![x](http://example.invalid)"})
    assert len(notes) == 2 and texts["s0"] == schema.defaults()["s0"]
    assert not any("](http" in n.replace("`", "") and "`" not in n for n in notes)


def test_present_flag():
    assert settings.present({"present": "1"}) and not settings.present({"present": "²"})


# ---------------------------------------------------------------- each page schema's bounds
@pytest.mark.parametrize("n", [1, 3, 8])
def test_training_offers_exactly_this_servers_device_counts(n):
    schema = trainingmodel.schema(n)
    k = schema.field("k")
    assert schema.defaults()["k"] == str(n)
    assert k.parse(str(n), "Devices") == str(n)
    for bad in ("0", str(n + 1)):
        with pytest.raises(valueparse.SettingError):
            k.parse(bad, "Devices")
    assert int(schema.defaults()["batch"]) % n == 0  # the default batch splits evenly


@pytest.mark.parametrize("n, m", [(1, 4), (8, 8), (63, 63), (64, 64), (65, 64), (512, 64)])
def test_collectives_elements_default_and_cap(n, m):
    schema = collectivechoices.schema(n)
    assert schema.defaults()["m"] == str(m) and schema.defaults()["n"] == str(n)
    values, errors = schema.parse({**schema.defaults(), "m": "64", "n": str(n)})
    assert not errors and values["m"] == 64 and values["n"] == n
    _, errors = schema.parse({**schema.defaults(), "m": "65"})
    assert len(errors) == 1 and "Elements per device" in errors[0]
    _, errors = schema.parse({**schema.defaults(), "n": str(n + 1)})
    assert len(errors) == 1 and "Devices" in errors[0]


def test_timing_keys_and_runs_bounds():
    schema = sweepsetup.schema(8, "dot")
    assert [f.key for f in schema.fields] == ["w", "r", "sizes", "ks", "impls"]
    r = schema.field("r")
    assert r.parse("3", "Timed runs") == 3 and r.parse("30", "Timed runs") == 30
    for bad in ("2", "31"):
        with pytest.raises(valueparse.SettingError, match="Timed runs"):
            r.parse(bad, "Timed runs")
    texts, notes = schema.from_query({"r": "12"})
    assert texts["r"] == "12" and not notes


def test_explorer_labels_arguments_by_position_and_bounds_links():
    schema = scenarios.schema(8)
    labels = {f.key: f.label for f in schema.fields}
    assert [labels[f"s{k}"] for k in range(3)] == ["shape 1", "shape 2", "shape 3"]
    assert [labels[f"a{k}"] for k in range(3)] == ["in_axes 1", "in_axes 2", "in_axes 3"]
    texts, notes = schema.from_query({"s1": "8, y", "pn": "4097"})
    assert texts["s1"] == schema.defaults()["s1"] and texts["pn"] == ""
    assert len(notes) == 2 and "4,096" in notes[0] and "s1=" in notes[1], notes
    texts, notes = schema.from_query({"pn": "4096", "s1": "{'w': (5, 2)}"})
    assert texts["pn"] == "4096" and texts["s1"] == "{'w': (5, 2)}" and not notes


def test_explorer_links_with_a_refused_expression_fall_back_together():
    schema = scenarios.schema(8)
    texts, notes = schema.from_query({"fn": "expr", "args": "x", "body": "x.__class__"})
    assert (texts["args"], texts["body"]) == (schema.defaults()["args"], schema.defaults()["body"])
    assert len(notes) == 1 and notes[0].startswith("The link's args/body:"), notes
    texts, notes = schema.from_query({"fn": "expr", "args": "x, p", "body": "x + p['w']"})
    assert texts["body"] == "x + p['w']" and not notes


def test_every_schema_field_has_its_url_key_and_the_label_its_messages_use():
    """Keys are the links' vocabulary (a renamed key breaks every shared link); labels name
    the field in every message about it."""
    want = {
        collectivechoices.schema(8): [
            ("c", "Collective"),
            ("n", "Devices"),
            ("m", "Elements per device"),
            ("v", "Values"),
            ("g", "axis_index_groups"),
            ("p", "Permutation"),
            ("pairs", "Pairs"),
        ],
        trainingmodel.schema(8): [
            ("model", "Model"),
            ("k", "Devices"),
            ("batch", "Global batch"),
            ("steps", "Steps"),
            ("lr", "Learning rate"),
            ("red", "Reduction"),
            ("pod", "the target"),
        ],
        sweepsetup.schema(8): [
            ("w", "Workload"),
            ("r", "Timed runs"),
            ("sizes", "Sizes"),
            ("ks", "Device counts"),
            ("impls", "Implementations"),
        ],
    }
    for schema, fields in want.items():
        assert [(f.key, f.label) for f in schema.fields] == fields
    explorer = {f.key: f.label for f in scenarios.schema(8).fields}
    assert {k: explorer[k] for k in ("fn", "args", "body", "out", "name", "pn")} == {
        "fn": "Function",
        "args": "Arguments of f",
        "body": "Body of f",
        "out": "out_axes",
        "name": "axis_name",
        "pn": "Plan for N devices",
    }
    assert [f.label for f in scenarios.schema(8).fields if f.key in ("d0", "d1")] == [
        "dtype 1",
        "dtype 2",
    ]
    assert [(f.key, f.label) for f in clustersettings.schema().fields] == [
        ("p", "Processes"),
        ("d", "CPU devices per process"),
        ("report", "Report path"),
        ("nodes", "Nodes"),
        ("ppn", "Processes per node"),
        ("dpp", "Devices per process"),
        ("kind", "Device kind"),
    ]
    _, errors = trainingmodel.schema(8).parse({"k": "9"}, ["k"])
    assert errors and errors[0].startswith("Devices")


def test_float_and_link_messages_quote_what_was_typed():
    with pytest.raises(valueparse.SettingError, match="`500` is out of range"):
        valueparse.parse_float("500", "Learning rate", 1e-6, 100.0)
    texts, notes = scenarios.schema(8).from_query({"out": "x", "pn": "0"})
    assert texts["out"] == "0" and texts["pn"] == ""
    assert len(notes) == 2 and "out=" in notes[0] and "pn=" in notes[1], notes
    texts, notes = toursteps.schema().from_query({"step": "3"})
    assert texts["step"] == "3" and not notes


@pytest.mark.parametrize("n", [1, 3, 8])
def test_to_query_is_the_inverse_of_from_query_for_every_page(n):
    schemas = (
        scenarios.schema(n),
        collectivechoices.schema(n),
        trainingmodel.schema(n),
        clustersettings.schema(),
        toursteps.schema(),
        sweepsetup.schema(n, "matmul"),
    )
    for schema in schemas:
        values, errors = schema.parse(schema.defaults())
        assert not errors
        query = schema.to_query(values)  # typed values (lists too) back to text
        assert set(query) == {f.key for f in schema.fields}
        texts, notes = schema.from_query(query)
        assert notes == [] and schema.parse(texts)[0] == values


def test_to_query_leaves_out_what_it_is_not_given_and_joins_lists():
    schema = sweepsetup.schema(8, "dot")
    assert schema.to_query({"ks": [1, 2, 8], "w": "dot"}) == {"w": "dot", "ks": "1,2,8"}
