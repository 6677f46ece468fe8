"""The wheel built from this checkout, installed into a fresh venv: ``installed``, one for the
whole run (a session fixture, loaded by tests/conftest.py). Its users, tests/test_packaging.py
and tests/e2e/test_serve_wheel_e2e.py, are one xdist group ("wheel"), so one worker builds it.

The wheel is built from a copy of the checkout (setuptools writes build/ and *.egg-info where it
builds), then installed with no network and no dependencies into a fresh venv. That venv sees this
venv's packages (JAX, Streamlit, ...) through a .pth file, but not the checkout: its commands run
in a temporary folder with no PYTHONPATH, so what they import is the wheel.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parent.parent
BUILD_FILES = ("pyproject.toml", "setup.py", "README.md", "LICENSE", "setup.cfg")


def run_checked(args: list, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    """``args`` run to the end; it must exit 0."""
    done = subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{args}\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """The wheel built from a copy of the checkout, installed into a fresh venv."""
    tmp = tmp_path_factory.mktemp("packaging")
    src, dist, venv, home = tmp / "src", tmp / "dist", tmp / "venv", tmp / "home"
    for folder in ("pmapviz", "pages"):
        shutil.copytree(
            ROOT / folder, src / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc")
        )
    for name in BUILD_FILES:
        shutil.copy2(ROOT / name, src / name)
    py = sys.executable
    run_checked(
        [py, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w", dist, src], tmp
    )
    (wheel,) = dist.glob("pmapviz-*.whl")
    run_checked([py, "-m", "venv", "--without-pip", venv], tmp)
    vpy = venv / "bin" / "python"
    run_checked(
        [py, "-m", "pip", "--python", vpy, "install", "--no-deps", "--no-index", wheel], tmp
    )
    where = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(run_checked([vpy, "-c", where], tmp).stdout.strip())
    ours = sysconfig.get_paths()
    (site / "pmapviz_test_deps.pth").write_text(
        "".join(f"{p}\n" for p in dict.fromkeys([ours["purelib"], ours["platlib"]]))
    )
    home.mkdir()
    env = {"PATH": f"{venv / 'bin'}{os.pathsep}/usr/bin{os.pathsep}/bin", "HOME": str(home)}
    env.update({k: os.environ[k] for k in ("LANG", "TMPDIR") if k in os.environ})
    return SimpleNamespace(wheel=wheel, venv=venv, python=vpy, site=site, env=env, cwd=home)
