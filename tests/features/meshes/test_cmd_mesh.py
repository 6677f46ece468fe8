"""python -m pmapviz mesh: the mesh and each argument's blocks, as JAX places them."""

import json

import pytest

from pmapviz.core.base import valueparse
from pmapviz.core.devices import jaxstartup


def test_mesh_json_has_the_mesh_and_each_argument_as_jax_places_it(capsys, monkeypatch):
    from pmapviz.app import cli

    # the suite's 8 devices are up already; applying the command's own settings would change
    # what every later test of this process reads from devices.applied_settings()
    monkeypatch.setattr(jaxstartup, "apply", lambda settings: None)

    assert (
        cli.main(
            [
                "mesh",
                "--mesh",
                "2,4",
                "--axis-names",
                "data,model",
                "--shape",
                "8,16",
                "--spec",
                "P('data', None)",
                "--shape",
                "8",
                "--spec",
                "P()",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["mesh"] == {
        "shape": [2, 4],
        "axis_names": ["data", "model"],
        "devices": [[0, 1, 2, 3], [4, 5, 6, 7]],
    }
    first, second = out["arguments"]
    assert first["spec"] == ["data", None] and first["local_shape"] == [4, 16]
    assert first["replicated_over"] == ["model"] and len(first["devices"]) == 8
    assert first["devices"][5] == {"id": 5, "coords": [1, 1], "index": [[4, 8], [0, 16]]}
    assert second["replicated_over"] == ["data", "model"] and second["local_shape"] == [8]
    assert out["problems"] == []


def test_mesh_refusals_exit_1_with_a_fix_and_bad_text_exits_2(capsys, monkeypatch):
    from pmapviz.app import cli

    monkeypatch.setattr(jaxstartup, "apply", lambda settings: None)  # as above

    assert (
        cli.main(
            ["mesh", "--plan-devices", "16", "--mesh", "4x4", "--shape", "6", "--spec", "model"]
        )
        == 1
    )
    said = capsys.readouterr().out
    assert "4 does not divide 6" in said and "fix: Make dimension 0 a multiple of 4" in said
    assert cli.main(["mesh", "--mesh", "2x4", "--shape", "8", "--spec", "P('data'"]) == 2
    assert "--spec 1" in capsys.readouterr().err
    assert (
        cli.main(["mesh", "--plan-devices", "8", "--mesh", "4x4", "--shape", "8", "--spec", "P()"])
        == 2
    )
    assert "has 16 devices" in capsys.readouterr().err
    assert cli.main(["mesh", "--mesh", "4x4", "--shape", "8", "--spec", "P()"]) == 2
    assert "--plan-devices 16" in capsys.readouterr().err  # more than this process has


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16])
def test_mesh_with_no_flags_places_the_meshes_pages_example_on_every_count(capsys, n):
    """`python -m pmapviz mesh` alone works on every count, with the page's own defaults."""
    from pmapviz.app import cli
    from pmapviz.features.meshes import meshsettings

    assert cli.main(["mesh", "--plan-devices", str(n), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["mesh"]["shape"] == list(meshsettings.default_mesh(n)) and out["problems"] == []
    page = meshsettings.schema(n).defaults()
    assert [a["shape"] for a in out["arguments"]] == [
        list(valueparse.parse_shape(page[k])) for k in ("s0", "s1")
    ]
    assert sum(len(a["devices"]) for a in out["arguments"]) == 2 * n


def test_mesh_plans_a_bigger_machine_from_shapes_alone(capsys):
    from pmapviz.app import cli

    assert (
        cli.main(
            [
                "mesh",
                "--plan-devices",
                "16",
                "--mesh",
                "4x4",
                "--shape",
                "8,16",
                "--spec",
                "data, model",
                "--json",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["mesh"]["devices"][3] == [12, 13, 14, 15]
    assert out["arguments"][0]["local_shape"] == [2, 4]
    assert out["arguments"][0]["devices"][-1]["index"] == [[6, 8], [12, 16]]
    assert out["axis_types"] == {"mesh": ["explicit", "explicit"]}  # planned: none read
    assert "type" not in out["arguments"][0]


def test_mesh_axis_types_give_each_arguments_type_as_jax_typeof_prints_it(capsys, monkeypatch):
    import jax
    import numpy as np
    from jax.sharding import AxisType, NamedSharding
    from jax.sharding import PartitionSpec as P

    from pmapviz.app import cli

    monkeypatch.setattr(jaxstartup, "apply", lambda settings: None)  # as above
    argv = ["mesh", "--mesh", "2x4", "--axis-types", "Explicit,auto", "--shape", "8,16"]
    assert cli.main([*argv, "--spec", "P('data', 'model')", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = jax.make_mesh(
        (2, 4),
        ("data", "model"),
        devices=jax.devices()[:8],
        axis_types=(AxisType.Explicit, AxisType.Auto),
    )
    x = jax.device_put(np.zeros((8, 16), np.float32), NamedSharding(m, P("data", "model")))
    assert out["arguments"][0]["type"] == str(jax.typeof(x)) == "float32[8@data,16]"
    assert out["arguments"][0]["per_device_type"] == "float32[4,4]{V:(data,model)}"
    assert out["axis_types"]["mesh"] == ["explicit", "auto"]
    assert out["axis_types"]["jax.make_mesh"] == ["explicit", "explicit"]
    assert out["axis_types"]["Mesh"] == ["auto", "auto"]
    assert cli.main([*argv, "--spec", "data"]) == 0
    text = capsys.readouterr().out
    assert "axis types explicit, auto (jax.make_mesh's default: explicit, explicit" in text
    assert "  jax.typeof: float32[8@data,16]; each device inside shard_map" in text
    assert cli.main(["mesh", "--mesh", "2x4", "--axis-types", "explicit,<b>"]) == 2
    assert capsys.readouterr().err.strip() == (
        "pmapviz: --axis-types `<b>` is not an axis type: write auto, explicit or manual."
    )
