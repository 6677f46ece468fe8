"""Project rules that keep the code base healthy: lint, a Streamlit-free core (Streamlit only in
a ``ui`` package, which never imports JAX), no eval/exec, no JAX at import time, one thin file
per page, tests that mirror the package. The floors of the house: tests/test_floors.py."""

import ast
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pmapviz.app.page_registry import PAGES
from tests.conftest import ROOT

PKG = ROOT / "pmapviz"
_ALL = sorted(PKG.rglob("*.py"))
UI = [p for p in _ALL if "ui" in p.relative_to(PKG).parts[:-1]]  # the ui packages: Streamlit
CORE = [p for p in _ALL if p not in UI]
PAGE_FILES = sorted((ROOT / "pages").glob("[!_]*.py"))  # one file per page, at the top


def _imports(path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from (a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            yield node.module


@pytest.mark.parametrize("path", CORE, ids=[p.name for p in CORE])
def test_core_modules_do_not_import_streamlit(path):
    """Only a ``ui`` package (pmapviz/core/ui/, pmapviz/<feature>/ui/) draws with Streamlit."""
    found = [m for m in _imports(path) if m.split(".")[0] == "streamlit"]
    assert not found  # doctor's page check too: it is pmapviz.app.ui.page_check


# third-party imports a ui module makes inside a function, and why
LAZY_BY_DESIGN = {
    "page_check.py": ("streamlit", "the doctor's AppTest: the CLI starts without Streamlit"),
}


def _lazy_by_design(path: Path, node: ast.Import | ast.ImportFrom) -> bool:
    allowed = LAZY_BY_DESIGN.get(path.name)
    names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
    return bool(allowed) and all((n or "").split(".")[0] == allowed[0] for n in names)


@pytest.mark.parametrize("path", UI, ids=[p.name for p in UI])
def test_ui_never_imports_jax_and_imports_at_module_level(path):
    """The ui package draws what the core computed: no JAX or numpy of its own, and its
    imports all at the top of the module (none inside a function)."""
    tree = ast.parse(path.read_text())
    assert not [m for m in _imports(path) if m.split(".")[0] in ("jax", "jaxlib", "numpy")]
    inner = [
        f"{f.name}:{n.lineno}"
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
        if isinstance(n, ast.Import | ast.ImportFrom) and not _lazy_by_design(path, n)
    ]
    assert not inner, f"{path.name}: move these imports to the top: {inner}"


PLATFORM_WORDS = (
    "emulated",
    "jax_num_cpu_devices",
    "physical_cores",
    'platform == "cpu"',
    "CPU core",
)


@pytest.mark.parametrize("path", PAGE_FILES, ids=lambda p: p.name)
def test_pages_take_every_platform_statement_from_devicefacts(path):
    """What the devices are (real or emulated, cores, the CPU story) is said by
    pmapviz.core.devices.devicefacts, never written into a page: a GPU server would tell the CPU
    story."""
    text = path.read_text()
    assert not [w for w in PLATFORM_WORDS if w in text]


def test_nothing_calls_eval_or_exec():
    files = [*CORE, *UI, ROOT / "app.py", *PAGE_FILES]
    for path in files:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in {"eval", "exec", "compile"}, f"{path}: {node.func.id}"


def test_importing_the_package_and_device_setup_does_not_start_jax():
    code = (
        "import sys, pmapviz, pmapviz.core.devices.jaxstartup, pmapviz.app.cli;"
        "print('jax' in sys.modules)"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "False"


def test_every_page_file_is_registered_and_routed():
    """Every page is in the page list, and its first statement after the imports is the
    routing guard (shell.ensure_routed)."""
    files = {str(p) for p in PAGE_FILES}
    assert files == {p.path for p in PAGES}
    assert len({p.url_path for p in PAGES}) == len(PAGES)
    for path in files:
        tree = ast.parse(Path(path).read_text())
        assert ast.get_docstring(tree), path
        body = [n for n in tree.body[1:] if not isinstance(n, ast.Import | ast.ImportFrom)]
        assert ast.unparse(body[0]) == "shell.ensure_routed()", path


def test_ruff_lint_and_format():
    beside_python = Path(sys.executable).parent / "ruff"  # the pinned one, in this venv
    ruff = str(beside_python) if beside_python.exists() else shutil.which("ruff")
    assert ruff, "ruff is not installed: pip install -r requirements-dev.txt"
    check = subprocess.run([ruff, "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert check.returncode == 0, check.stdout
    fmt = subprocess.run([ruff, "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout


def _product_files() -> list[Path]:
    return [
        *sorted((ROOT / "pmapviz").rglob("*.py")),
        ROOT / "app.py",
        *PAGE_FILES,
    ]


def test_the_formatter_owns_the_format_of_the_product_and_its_tests():
    """No hand alignment fights ruff format, in product code or in the tests."""
    marker = "fmt: " + "skip"  # spelled in two so this file holds none
    skips = [
        f"{path.relative_to(ROOT)}:{k}"
        for path in [*_product_files(), *sorted((ROOT / "tests").rglob("*.py"))]
        for k, line in enumerate(path.read_text().splitlines(), 1)
        if marker in line or "fmt: " + "off" in line
    ]
    assert not skips, skips


def test_every_public_function_and_class_says_what_it_is():
    """A one-line docstring on every public def and class (methods too; not _private)."""
    missing = []
    for path in _product_files():
        stack = [(ast.parse(path.read_text()), "")]
        while stack:
            node, prefix = stack.pop()
            for n in ast.iter_child_nodes(node):
                if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    if not n.name.startswith("_") and not ast.get_docstring(n):
                        missing.append(f"{path.relative_to(ROOT)}:{n.lineno} {prefix}{n.name}")
                    if isinstance(n, ast.ClassDef):
                        stack.append((n, f"{prefix}{n.name}."))
    assert not missing, f"{len(missing)} without a docstring: {missing}"


def test_public_api_is_thin_and_lazy():
    """Each public name is a documented function of a notebook view: a ``show*`` module of the
    core's drawing floor or of a feature (loaded on first use: ``import pmapviz`` loads no JAX,
    checked in tests/core/drawing/test_notebookviews.py)."""
    import pmapviz

    assert sorted(pmapviz.__all__) == sorted(pmapviz._PUBLIC)
    for name, module in pmapviz._PUBLIC.items():
        fn = getattr(pmapviz, name)
        assert fn.__module__ == module and fn.__name__ == name and fn.__doc__, name
        parts = module.split(".")
        assert parts[-1].startswith("show"), module
        assert parts[1:3] == ["core", "drawing"] or parts[1] == "features", module
        assert f":func:`pmapviz.{name}`" in pmapviz.__doc__, name
    with pytest.raises(AttributeError):
        pmapviz.not_there  # noqa: B018


def test_no_module_or_package_shadows_a_public_name():
    """Importing ``pmapviz.x`` sets the package's attribute ``x`` to that module, which would
    hide the public function ``pmapviz.x`` for good (the features live under
    pmapviz/features/, so pmapviz.features.compiled cannot)."""
    import pmapviz

    shadows = [n for n in pmapviz._PUBLIC if (PKG / f"{n}.py").exists() or (PKG / n).is_dir()]
    assert not shadows


SOURCES = [*CORE, *UI, *PAGE_FILES, ROOT / "app.py", *sorted((ROOT / "benchmarks").glob("*.py"))]


@pytest.mark.parametrize("path", SOURCES, ids=[f"{p.parent.name}/{p.name}" for p in SOURCES])
def test_no_function_over_80_lines(path):
    long = [
        f"{n.name} ({n.end_lineno - n.lineno + 1} lines)"
        for n in ast.walk(ast.parse(path.read_text()))
        if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        and n.end_lineno - n.lineno + 1 > 80
    ]
    assert not long, f"{path.name}: split {long}"


MAX_PAGE_LINES = 80


@pytest.mark.parametrize("path", PAGE_FILES, ids=[p.name for p in PAGE_FILES])
def test_pages_only_compose(path):
    """Pages read as a recipe: header -> components -> core call -> display, in at most
    MAX_PAGE_LINES lines. No JAX or numpy, no inline HTML, no HTML rendering of their own
    (the ui packages draw what needs HTML), no parsing of text; no state of their own
    (session state, caches and the runs' state machines live in the ui components), no URL
    written by hand (url_state.save writes it through the page's schema), and no function
    but the fragment an edit reruns."""
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_PAGE_LINES, f"{path.name}: move parts to a ui package"
    assert not [m for m in _imports(path) if m.split(".")[0] in ("jax", "numpy", "re")]
    for tag in ("<div", "<span", "<b>", "<br", "<small", "unsafe_allow_html"):
        assert tag not in text, f"{path.name}: {tag}"
    for parse in ("int(st.", "float(st.", ".isdigit()", "int(raw", "float(raw"):
        assert parse not in text, f"{path.name}: {parse}"
    for state in ("st.session_state", "st.cache_", "st.query_params", "urlencode"):
        assert state not in text, f"{path.name}: {state}"
    assert text.count("set_url(") == text.count("set_url({})"), f"{path.name}: url_state.save"
    for f in ast.walk(ast.parse(text)):
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef):
            assert [ast.unparse(d) for d in f.decorator_list] == ["shell.fragment"], f.name


def _test_file(path: Path) -> Path:
    """Where a module's tests live: the same place under tests/ as the module under pmapviz/
    (pmapviz/features/cluster/ui/x.py -> tests/features/cluster/ui/test_x.py)."""
    parts = path.relative_to(PKG).parts[:-1]
    return ROOT.joinpath("tests", *parts, f"test_{path.stem}.py")


def test_tests_mirror_the_package():
    """One test file per module, in the same place under tests/ as the module under pmapviz/,
    and no test file of a module that is gone."""
    # the pages' tests are AppTests of the whole app (tests/pages/, one file or more per page)
    # and the e2e suite; the entry script is tests/app/ui/test_dashboard.py's
    by_app = [*PAGE_FILES, PKG / "app" / "ui" / "entry" / "streamlit_app.py"]
    expected = {
        p: _test_file(p)
        for p in _ALL
        if p.name not in ("__init__.py", "__main__.py") and p not in by_app
    }
    missing = [str(t.relative_to(ROOT)) for t in expected.values() if not t.exists()]
    assert not missing, f"missing {missing}"
    wanted = set(expected.values())
    extra = {ROOT / "tests" / "core" / "xla" / "test_timeline_fuzz.py"}  # the trace reader's fuzz
    strays = [
        str(t.relative_to(ROOT))
        for t in (ROOT / "tests").rglob("test_*.py")
        if t.parent != ROOT / "tests"
        and t.relative_to(ROOT / "tests").parts[0] not in ("pages", "e2e")
        and t not in wanted | extra
    ]
    assert not strays, f"tests of no module: {strays}"


UI_TABLES = ROOT / "pmapviz" / "core" / "ui" / "tables.py"


def _st_calls(path, names):
    for node in ast.walk(ast.parse(path.read_text())):
        func = getattr(node, "func", None)
        st_call = isinstance(func, ast.Attribute) and getattr(func.value, "id", "") == "st"
        if st_call and func.attr in names:
            yield f"{path.name}:{node.lineno}: st.{func.attr}"


def test_tables_are_drawn_through_ui_so_pandas_is_imported_once():
    """st.dataframe and st.table import pandas inside Streamlit; two sessions doing that at
    once raced. pmapviz.core.ui.tables takes pmapviz.core.base.heavyimports's lock first."""
    sources = [p for p in [*CORE, *UI, *PAGE_FILES, ROOT / "app.py"] if p != UI_TABLES]
    assert not [c for p in sources for c in _st_calls(p, ("dataframe", "table"))]
    imports = [p.name for p in sources if "pandas" in set(_imports(p))]
    assert imports == [], "import pandas through heavyimports.pandas()"


MAX_MODULE_LINES = 450


@pytest.mark.parametrize("path", _ALL, ids=lambda p: str(p.relative_to(PKG)))
def test_no_module_over_450_lines(path):
    """A module that grows past MAX_MODULE_LINES holds two things: split it by what it holds."""
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES


def test_no_class_name_is_defined_twice():
    """One name, one class: two ``Report``s (or ``Step``s) read as one in a traceback, a
    docstring or a search."""
    where: dict[str, list[str]] = {}
    for path in _ALL:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                where.setdefault(node.name, []).append(str(path.relative_to(PKG)))
    assert not {name: paths for name, paths in where.items() if len(paths) > 1}
