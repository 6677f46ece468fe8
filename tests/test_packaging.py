"""pmapviz as a package: pyproject.toml builds a wheel that installs and runs on its own.

The wheel and its fresh venv: ``installed`` (tests/wheelbuild.py, built once a run and shared
with tests/e2e/test_serve_wheel_e2e.py, in this module's xdist group).
"""

import email.parser
import importlib.metadata
import tomllib
import zipfile
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

import pmapviz
from pmapviz.app import cli
from tests.wheelbuild import run_checked

ROOT = Path(__file__).resolve().parent.parent
# requirements.txt's pins of packages the app does not import: a dependency's dependency, pinned
# for a reason said there, and bounded from above in the wheel's requirements for that reason
INDIRECT = {"ml_dtypes"}
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())
# tests/wheelbuild.py's ``installed`` is built once a run: its users are one xdist group
pytestmark = pytest.mark.xdist_group("wheel")


def _pins() -> dict[str, Version]:
    """requirements.txt's exact pins, ``name -> version``."""
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            req = Requirement(line)
            (spec,) = req.specifier
            assert spec.operator == "==", f"requirements.txt pins exactly: {line}"
            pins[req.name] = Version(spec.version)
    return pins


def test_the_wheel_holds_the_icon_the_license_and_the_requirements(installed):
    with zipfile.ZipFile(installed.wheel) as whl:
        names = set(whl.namelist())
        info = f"pmapviz-{pmapviz.__version__}.dist-info"
        meta = email.parser.Parser().parsestr(whl.read(f"{info}/METADATA").decode())
        icon = ROOT / "pmapviz" / "app" / "icon.png"
        assert whl.read("pmapviz/app/icon.png") == icon.read_bytes()
        assert whl.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
    modules = {p.relative_to(ROOT).as_posix() for p in (ROOT / "pmapviz").rglob("*.py")}
    assert modules <= names, sorted(modules - names)  # every module and subpackage
    assert not {n for n in names if n.split("/")[0] not in ("pmapviz", info)}, names
    assert meta["Name"] == "pmapviz" and meta["Version"] == pmapviz.__version__
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["Requires-Python"] == PYPROJECT["project"]["requires-python"]
    every = [Requirement(r) for r in meta.get_all("Requires-Dist")]
    required = {r.name: r for r in every if not r.marker or "extra" not in str(r.marker)}
    pins = _pins()
    direct = {name: pin for name, pin in pins.items() if name not in INDIRECT}
    assert set(direct) == {"jax", "jaxlib", "numpy", "streamlit", "plotly", "pandas", "psutil"}
    assert set(required) == set(pins) == set(direct) | INDIRECT
    # the pods extra: libtpu as requirements-pods.txt pins it, for Linux x86_64 only
    assert meta.get_all("Provides-Extra") == ["pods"]
    pods = [r for r in every if r.marker and 'extra == "pods"' in str(r.marker)]
    pin = Requirement((ROOT / "requirements-pods.txt").read_text().split("\n")[-2])
    assert [r.name for r in pods] == ["libtpu"] and pods[0].specifier.contains(
        str(*pin.specifier)[2:]
    )
    assert "linux" in str(pods[0].marker) and "x86_64" in str(pods[0].marker)
    for name, pin in pins.items():
        assert required[name].specifier.contains(pin), (name, str(required[name]), pin)
    # ml_dtypes: the wheel's bound takes requirements.txt's pin and keeps pip below the release
    # requirements.txt pins away from (the next minor, named there as the slow one)
    pin = pins["ml_dtypes"]
    slow = Version(f"{pin.major}.{pin.minor + 1}.0")
    assert f"ml_dtypes {slow}'s extension takes" in (ROOT / "requirements.txt").read_text()
    assert not required["ml_dtypes"].specifier.contains(slow), str(required["ml_dtypes"])


def test_the_wheel_carries_the_checkouts_pages_byte_for_byte(installed):
    """pages/ at the top of a checkout is the one copy of the page scripts: the wheel maps it
    into the package (setup.py), and an installed pmapviz finds it there."""
    pages = sorted((ROOT / "pages").glob("*.py"))
    assert [p.name for p in pages if p.name != "__init__.py"]  # the dashboard's pages
    assert not (ROOT / "pmapviz" / "app" / "ui" / "pages").exists()  # nothing kept twice
    with zipfile.ZipFile(installed.wheel) as whl:
        shipped = {n for n in whl.namelist() if n.startswith("pmapviz/app/ui/pages/")}
        assert shipped == {f"pmapviz/app/ui/pages/{p.name}" for p in pages}
        for p in pages:
            assert whl.read(f"pmapviz/app/ui/pages/{p.name}") == p.read_bytes(), p.name
    where = "from pmapviz.core.base import pageinfo; print(pageinfo.page_file('explorer'))"
    said = run_checked([installed.python, "-c", where], installed.cwd, installed.env).stdout
    found = Path(said.strip())
    assert found.read_bytes() == (ROOT / "pages" / "explorer.py").read_bytes()
    assert installed.site in found.parents  # the wheel's copy, not the checkout's


def test_every_lower_bound_is_met_by_the_tested_pin_and_only_ml_dtypes_has_an_upper_one():
    deps = [Requirement(d) for d in PYPROJECT["project"]["dependencies"]]
    pins = _pins()
    assert sorted(d.name for d in deps) == sorted(pins)
    for dep in deps:
        ops = sorted(s.operator for s in dep.specifier)
        pin = pins[dep.name]
        if dep.name not in INDIRECT:
            assert ops == [">="], (
                f"{dep}: a lower bound only (requirements.txt pins the tested one)"
            )
        else:  # kept below a release for the reason requirements.txt gives
            assert ops == ["<", ">="], f"{dep}: a lower and an upper bound"
        low = next(s for s in dep.specifier if s.operator == ">=")
        assert Version(low.version) <= pin and dep.specifier.contains(pin), (str(dep), str(pin))
    # ml_dtypes' lower bound is one JAX itself accepts (JAX 0.10.2: ml_dtypes>=0.5.0)
    (ml,) = [d for d in deps if d.name == "ml_dtypes"]
    (jax_wants,) = [
        Requirement(r)
        for r in importlib.metadata.requires("jax")
        if Requirement(r).name == "ml_dtypes" and not Requirement(r).marker
    ]
    low = next(s for s in ml.specifier if s.operator == ">=")
    assert jax_wants.specifier.contains(low.version), (str(ml), str(jax_wants))


def test_the_version_is_read_from_the_package():
    assert "version" in PYPROJECT["project"]["dynamic"]
    attr = PYPROJECT["tool"]["setuptools"]["dynamic"]["version"]["attr"]
    assert attr == "pmapviz.__version__"
    # canonical (PEP 440), so the wheel's name and METADATA carry it unchanged (checked above)
    assert str(Version(pmapviz.__version__)) == pmapviz.__version__


def test_the_installed_command_lists_every_command(installed):
    done = run_checked([installed.venv / "bin" / "pmapviz", "--help"], installed.cwd, installed.env)
    assert done.stdout.startswith("usage: pmapviz ")  # named as the user called it
    for name, command in cli.COMMANDS.items():
        assert name in done.stdout and command.help.split()[0] in done.stdout, name


def test_the_installed_command_plans_what_jax_computes(installed):
    import jax
    import jax.numpy as jnp

    args = ["plan", "--fn", "matmul", "--shape", "2,4,5", "--shape", "5,2", "--in-axes", "0,None"]
    done = run_checked(
        [installed.venv / "bin" / "pmapviz", *args, "--devices", "2"], installed.cwd, installed.env
    )
    x, w = jax.ShapeDtypeStruct((2, 4, 5), jnp.float32), jax.ShapeDtypeStruct((5, 2), jnp.float32)
    whole = jax.eval_shape(jax.pmap(jnp.matmul, in_axes=(0, None), devices=jax.devices()[:2]), x, w)
    each = jax.eval_shape(jnp.matmul, jax.ShapeDtypeStruct((4, 5), jnp.float32), w)
    lines = done.stdout.splitlines()
    assert lines[0].endswith("pmap over 2 device(s): OK"), done.stdout
    assert f"computes {each.shape}; result {whole.shape}" in done.stdout, done.stdout


def test_importing_the_installed_package_takes_the_wheel_and_no_jax(installed):
    code = "import pmapviz, sys; print(pmapviz.__file__); print('jax' in sys.modules)"
    done = run_checked([installed.python, "-c", code], installed.cwd, installed.env)
    where, jax_loaded = done.stdout.splitlines()
    assert Path(where) == installed.site / "pmapviz" / "__init__.py"
    assert not Path(where).resolve().is_relative_to(ROOT)
    assert jax_loaded == "False"


def test_the_installed_api_draws_a_plan_in_a_fresh_process(installed):
    """The issue's own line: `python -c "import pmapviz; print(pmapviz.plan('dot', ...))"`
    in the fresh venv; JAX starts there with the devices it is given."""
    code = (
        "import pmapviz; pmapviz.devices(2); v = pmapviz.plan('dot', [(2, 3), (2, 3)]); "
        "print(v); print(len(v._repr_html_()))"
    )
    done = run_checked([installed.python, "-c", code], installed.cwd, installed.env)
    lines = done.stdout.splitlines()
    assert lines[0] == "jax.pmap plan of vdot on 2 device(s): OK", done.stdout
    assert "  cpu:1: x slice [1:2, :]; y slice [1:2, :]" in done.stdout, done.stdout
    assert int(lines[-1]) > 1000  # its notebook picture
