"""Project rules that keep the code base healthy: lint, a Streamlit-free core, no eval/exec,
no JAX at import time, one thin file per page."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pmapviz.ui import PAGES
from tests.conftest import ROOT

CORE = sorted((ROOT / "pmapviz").glob("*.py"))


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("path", CORE, ids=[p.name for p in CORE])
def test_core_modules_do_not_import_streamlit(path):
    if path.name == "ui.py":  # the one shared-widgets module
        return
    found = [m for m in _imports(path) if m.split(".")[0] == "streamlit"]
    if path.name == "doctor.py":  # the accelerator check drives the pages through AppTest
        found = [m for m in found if not m.startswith(("streamlit.testing", "streamlit.runtime"))]
    assert not found


PLATFORM_WORDS = ("emulated", "jax_num_cpu_devices", "physical_cores", 'platform == "cpu"',
                  "CPU core")  # fmt: skip


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_take_every_platform_statement_from_devicefacts(path):
    """What the devices are (real or emulated, cores, the CPU story) is said by
    pmapviz.devicefacts, never written into a page: a GPU server would tell the CPU story."""
    text = path.read_text()
    assert not [w for w in PLATFORM_WORDS if w in text]


def test_nothing_calls_eval_or_exec():
    files = [*CORE, ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec", "compile"}, f"{path}: {node.func.id}"


def test_importing_the_package_and_device_setup_does_not_start_jax():
    code = "import sys, pmapviz, pmapviz.devices, pmapviz.cli; print('jax' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_every_page_file_is_registered_and_routed():
    files = {f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py")}
    assert files == {p.path for p in PAGES}
    assert len({p.url_path for p in PAGES}) == len(PAGES)
    for path in files:
        assert "ui.ensure_routed()" in (ROOT / path).read_text()


def test_ruff_lint_and_format():
    beside_python = Path(sys.executable).parent / "ruff"  # the pinned one, in this venv
    ruff = str(beside_python) if beside_python.exists() else shutil.which("ruff")
    assert ruff, "ruff is not installed: pip install -r requirements-dev.txt"
    check = subprocess.run([ruff, "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run([ruff, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout


def test_public_api_is_thin_and_lazy():
    import pmapviz
    from pmapviz import planning

    assert pmapviz.plan is planning.plan
    with pytest.raises(AttributeError):
        pmapviz.not_there  # noqa: B018


PAGE_FILES = sorted((ROOT / "pages").glob("*.py"))
SOURCES = [*CORE, *PAGE_FILES, ROOT / "app.py", *sorted((ROOT / "benchmarks").glob("*.py"))]


@pytest.mark.parametrize("path", SOURCES, ids=[f"{p.parent.name}/{p.name}" for p in SOURCES])
def test_no_function_over_80_lines(path):
    long = [f"{n.name} ({n.end_lineno - n.lineno + 1} lines)"
            for n in ast.walk(ast.parse(path.read_text()))
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.end_lineno - n.lineno + 1 > 80]  # fmt: skip
    assert not long, f"{path.name}: split {long}"


@pytest.mark.parametrize("path", PAGE_FILES, ids=[p.name for p in PAGE_FILES])
def test_pages_only_compose(path):
    """Pages: widgets -> core call -> display. No JAX or numpy, no inline HTML, no HTML
    rendering of their own (ui.py draws what needs HTML), no parsing of text."""
    text = path.read_text()
    assert not [m for m in _imports(path) if m.split(".")[0] in ("jax", "numpy", "re")]
    for tag in ("<div", "<span", "<b>", "<br", "<small", "unsafe_allow_html"):
        assert tag not in text, f"{path.name}: {tag}"
    for parse in ("int(st.", "float(st.", ".isdigit()", "int(raw", "float(raw"):
        assert parse not in text, f"{path.name}: {parse}"


def test_tests_mirror_the_package():
    """One test file per core module (tests/core/test_<module>.py)."""
    missing = [p.name for p in CORE if p.name not in ("__init__.py", "__main__.py")
               and not (ROOT / "tests" / "core" / f"test_{p.stem}.py").exists()]  # fmt: skip
    assert not missing, f"no tests/core/test_<module>.py for {missing}"


def _st_calls(path, names):
    for node in ast.walk(ast.parse(path.read_text())):
        func = getattr(node, "func", None)
        st_call = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "st"
        if st_call and func.attr in names:
            yield f"{path.name}:{node.lineno}: st.{func.attr}"


def test_tables_are_drawn_through_ui_so_pandas_is_imported_once():
    """st.dataframe and st.table import pandas inside Streamlit; two sessions doing that at
    once raced. ui.dataframe and ui.table take pmapviz.warmup's lock first."""
    sources = [p for p in [*CORE, *PAGE_FILES, ROOT / "app.py"] if p.name != "ui.py"]
    assert not [c for p in sources for c in _st_calls(p, ("dataframe", "table"))]
    imports = [p.name for p in sources if "pandas" in set(_imports(p))]
    assert imports == [], "import pandas through warmup.pandas()"
