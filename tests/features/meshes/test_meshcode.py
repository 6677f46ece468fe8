"""Mesh scripts: each runs in a fresh Python, both views, and they agree."""

import subprocess
import sys

from pmapviz.features.meshes import meshcode


def test_mesh_scripts_run_both_views_and_agree(tmp_path):
    """Every Meshes example exported as a script runs in a fresh Python and checks that the
    global view (jit with NamedSharding) and the per-device view (shard_map) agree."""
    from pmapviz.features.meshes import meshexamples

    for ex in meshexamples.EXAMPLES:
        path = tmp_path / f"mesh_{ex.key}.py"
        path.write_text(meshcode.mesh_script(ex))
        r = subprocess.run(
            [sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=180
        )
        assert r.returncode == 0, (ex.key, r.stderr[-2000:])
        assert "max |global - per-device| =" in r.stdout
        assert r.stdout.count(" holds ") == ex.mesh.devices  # one line per device's block


def test_the_exported_script_of_your_f_runs_both_views(tmp_path):
    from pmapviz.features.meshes import meshownf
    from pmapviz.features.meshes.meshspecs import Mesh

    mesh = Mesh((2, 4), ("data", "model"))
    args = [("x", (8, 16), ("data", None)), ("w", (16, 16), (None, "model"))]
    f = meshownf.MeshF(
        "x, w",
        "x @ w",
        "lax.all_gather(x @ w, 'model', axis=1, tiled=True, to='invarying')",
        ("data", None),
    )
    g, loc = f.programs()
    path = tmp_path / "mesh_your_f.py"
    path.write_text(meshcode.mesh_own_script(mesh, args, g, loc, f.out_spec))
    r = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert r.returncode == 0, r.stderr[-2000:]
    assert "max |global - per-device| =" in r.stdout and r.stdout.count(" holds ") == 8


def test_the_types_script_says_the_axis_types_and_prints_what_the_page_shows(tmp_path):
    """Run in a fresh Python, it prints each argument's jax.typeof and each device's block
    type: the same text the page reads (meshtypes), for a Manual and an Auto axis."""
    from pmapviz.features.meshes import meshtypes
    from pmapviz.features.meshes.meshspecs import Mesh

    mesh = Mesh((2, 4), ("data", "model"), ("manual", "auto"))
    args = [("x", (8, 16), ("data", None)), ("w", (16, 12), ("data", "model"))]
    script = meshcode.types_script(mesh, args)
    assert "axis_types=(AxisType.Explicit, AxisType.Auto))" in script
    assert "axis_names={'data'}" in script and "# data: Manual only inside" in script
    path = tmp_path / "mesh_types.py"
    path.write_text(script)
    r = subprocess.run(
        [sys.executable, str(path)], cwd=tmp_path, capture_output=True, text=True, timeout=180
    )
    assert r.returncode == 0, r.stderr[-2000:]
    found = meshtypes.read(mesh, args)
    for row in found.args:
        assert f"{row.name}: {row.yours}\n" in r.stdout
        assert f"each device's {row.name}: {row.per_device}\n" in r.stdout


def test_the_views_script_names_its_axis_types():
    from pmapviz.features.meshes import meshownf
    from pmapviz.features.meshes.meshspecs import Mesh

    f = meshownf.MeshF("x", "x * 2", "x * 2", ("data",))
    g, loc = f.programs()
    args = [("x", (8,), ("data",))]
    auto = meshcode.mesh_own_script(Mesh((8,), ("data",), ("auto",)), args, g, loc, f.out_spec)
    assert "jax.make_mesh((8,), ('data',),\n                     axis_types=(AxisType.Auto,))" in (
        auto
    )
    default = meshcode.mesh_own_script(Mesh((8,), ("data",)), args, g, loc, f.out_spec)
    assert "axis_types=(AxisType.Explicit,))" in default
