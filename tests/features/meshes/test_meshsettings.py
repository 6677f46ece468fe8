"""The Meshes page's settings: its schema round-trips and its defaults fit the devices; the
arguments are named after f's."""

import math

from pmapviz.features.meshes import meshsettings, meshspecs
from pmapviz.features.meshes.meshspecs import Mesh


def test_the_page_schema_round_trips_and_its_defaults_fit_the_devices():
    for n in (1, 2, 6, 8):
        schema = meshsettings.schema(n)
        values, errors = schema.parse(schema.defaults())
        assert not errors and math.prod(values["mesh"]) == n
        mesh = Mesh(
            values["mesh"], meshspecs.parse_axis_names(values["names"], len(values["mesh"]))
        )
        for k in range(2):
            assert meshspecs.problems(mesh, values[f"s{k}"], values[f"p{k}"]) == [], (n, k)
        texts, notes = schema.from_query(schema.to_query(values))
        assert notes == [] and schema.parse(texts)[0] == values


def test_argument_labels_are_fs_names_only_when_they_fit():
    assert meshsettings.argument_labels("x, w", 2) == ["x", "w"]
    assert meshsettings.argument_labels("x, w", 3) == ["argument 1", "argument 2", "argument 3"]
    assert meshsettings.argument_labels("x, 1w", 2) == ["argument 1", "argument 2"]  # not names
