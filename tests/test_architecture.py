"""Project rules that keep the code base healthy: lint, a Streamlit-free core (Streamlit only in
a ``ui`` package, which never imports JAX), no eval/exec, no JAX at import time, one thin file
per page, and a house whose floors follow from where a module lives: the ground
(``pmapviz/*.py``, ``pmapviz/core/ui/``) under the features (``pmapviz/<feature>/``) under the app
(``pmapviz/app/``, ``app.py``, ``pages/``)."""

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


@pytest.mark.parametrize("path", sorted((ROOT / "pages").glob("*.py")), ids=lambda p: p.name)
def test_pages_take_every_platform_statement_from_devicefacts(path):
    """What the devices are (real or emulated, cores, the CPU story) is said by
    pmapviz.core.devices.devicefacts, never written into a page: a GPU server would tell the CPU
    story."""
    text = path.read_text()
    assert not [w for w in PLATFORM_WORDS if w in text]


def test_nothing_calls_eval_or_exec():
    files = [*CORE, *UI, ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]
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
    files = {f"pages/{p.name}" for p in (ROOT / "pages").glob("*.py")}
    assert files == {p.path for p in PAGES}
    assert len({p.url_path for p in PAGES}) == len(PAGES)
    for path in files:
        tree = ast.parse((ROOT / path).read_text())
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
        *sorted((ROOT / "pages").glob("*.py")),
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
    """Each public name is a documented function of a presentation module (floor 5, loaded on
    first use: ``import pmapviz`` loads no JAX, checked in
    tests/core/drawing/test_notebookviews.py)."""
    import pmapviz

    assert sorted(pmapviz.__all__) == sorted(pmapviz._PUBLIC)
    for name, module in pmapviz._PUBLIC.items():
        fn = getattr(pmapviz, name)
        assert fn.__module__ == module and fn.__name__ == name and fn.__doc__, name
        assert GROUND_FLOOR[module.removeprefix("pmapviz.")] == 5, module
        assert f":func:`pmapviz.{name}`" in pmapviz.__doc__, name
    with pytest.raises(AttributeError):
        pmapviz.not_there  # noqa: B018


def test_no_module_or_package_shadows_a_public_name():
    """Importing ``pmapviz.x`` sets the package's attribute ``x`` to that module, which would
    hide the public function ``pmapviz.x`` for good (the Compiled and Timing features were
    renamed program/ and timinglab/ for this)."""
    import pmapviz

    shadows = [n for n in pmapviz._PUBLIC if _is_module(PKG, n)]
    assert not shadows


PAGE_FILES = sorted((ROOT / "pages").glob("*.py"))
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
    (pmapviz/ui draws what needs HTML), no parsing of text; no state of their own (session
    state, caches and the runs' state machines live in pmapviz/ui's components), no URL
    written by hand (url_state.save writes it through the page's schema), and no function
    but the fragment an edit reruns."""
    text = path.read_text()
    assert len(text.splitlines()) <= MAX_PAGE_LINES, f"{path.name}: move parts to pmapviz/ui"
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
    """Where a module's tests live: tests/core/ for the ground (pmapviz/x.py, pmapviz/core/ui/x.py),
    tests/<package>/ for a package (pmapviz/features/cluster/x.py ->
    tests/features/cluster/test_x.py)."""
    parts = path.relative_to(PKG).parts[:-1]
    folder = ("core",) if parts in ((), ("ui",)) else ()
    return ROOT.joinpath("tests", *folder, *parts, f"test_{path.stem}.py")


def test_tests_mirror_the_package():
    """One test file per module, in the same place under tests/ as the module under pmapviz/
    (the ground's under tests/core/), and no test file of a module that is gone."""
    expected = {p: _test_file(p) for p in _ALL if p.name not in ("__init__.py", "__main__.py")}
    missing = [str(t.relative_to(ROOT)) for t in expected.values() if not t.exists()]
    assert not missing, f"missing {missing}"
    wanted = set(expected.values())
    extra = {ROOT / "tests" / "core" / "test_timeline_fuzz.py"}  # the trace reader's fuzz
    strays = [
        str(t.relative_to(ROOT))
        for t in (ROOT / "tests").rglob("test_*.py")
        if t.parent != ROOT / "tests"
        and t.relative_to(ROOT / "tests").parts[0] not in ("pages", "e2e")
        and t not in wanted | extra
    ]
    assert not strays, f"tests of no module: {strays}"


UI_TABLES = ROOT / "pmapviz" / "ui" / "tables.py"


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


# ---------------------------------------------------------------- floors: imports go down only
# Three storeys, read from a module's path: the ground (pmapviz/*.py and pmapviz/core/ui/: what
# every
# feature stands on), the features (pmapviz/<feature>/: one capability a user sees, its core
# and its ui together), the app (pmapviz/app/, app.py, pages/: the shell and the CLI). A module
# imports from its own storey or below; a feature imports the ground and itself, never another
# feature, except where FEATURE_EXCEPTIONS says why. The ground keeps its six floors (values
# and text at the bottom ... presentation on top) in GROUND_FLOORS, one line per floor.
GROUND, FEATURE, APP = 0, 1, 2
STOREY_NAMES = ("the ground", "a feature", "the app")
FEATURE_EXCEPTIONS = {  # (feature, feature it may import): why
    ("tour", "cluster"): "the tour's step 12 launches a local cluster",
    ("tour", "live"): "the tour's step 2 runs the seed's 10M example",
}
GROUND_FLOORS = {  # ground modules only: each imports from its floor or below
    0: "settings valueparse valuetext pathparse palette queues hlo catalog folders"
    " workloads",  # text and values
    1: "collectivedefs compilecache pytrees expr deviceset hostmemory accelerators tracelanes"
    " devicefacts devicerates devicewords jaxstartup exprvocab exprnodes exprcalls exprparse"
    " tracefiles traceevents timeline benchreports",  # vocabulary
    2: "planning planfacts planinputrules planoutputrules placement scenarios"
    " meshspecs meshplacement meshsettings meshcollectives arrayshards",  # shapes
    3: "memory memoryestimates memorypool compiledmemory"
    " timebudget sweepsetup",  # pure estimators: numbers in, numbers out, no runner
    4: "pmaprun pmapcompile pmapdemos collectiveops programanalysis hiddencomm tracecapture"
    " trainingrun benchmarking meshviews meshexamples sandbox",  # runners
    5: "programtables charts timecharts timebars codegen heavyimports gridhtml meshgrids"
    " collectivegrids notebookviews showdevices showplan showarray showcollective"
    " showcompiled showmesh showtiming",  # presentation without Streamlit
    6: "ui __init__",  # the ground's Streamlit components, and the package's lazy door
}
GROUND_FLOOR = {name: floor for floor, names in GROUND_FLOORS.items() for name in names.split()}
FLOOR_NAMES = (
    "text and values",
    "vocabulary",
    "shapes",
    "estimators",
    "runners",
    "presentation",
    "components",
)
FEATURES = sorted(
    p.name for p in PKG.iterdir() if (p / "__init__.py").exists() and p.name not in ("ui", "app")
)
HOUSE = [*_ALL, ROOT / "app.py", *sorted((ROOT / "pages").glob("*.py"))]  # what has floors


def _node(path: Path) -> str:
    """A module's name in the import graph: pmapviz.x -> x, pmapviz/features/cluster/ui/x ->
    cluster.ui.x,
    app.py -> app.py, pages/x.py -> pages.x."""
    if path.name == "app.py" and path.parent == ROOT:
        return "app.py"
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[1:] if rel.parts[0] == "pmapviz" else rel.parts
    return ".".join(parts).removesuffix(".__init__")


def _storey(node: str) -> tuple[int, str]:
    """(storey, its feature or "") of a node, from where it lives."""
    top = node.split(".")[0]
    if node == "app.py" or top in ("pages", "app", "__main__"):
        return APP, ""
    return (FEATURE, top) if top in FEATURES else (GROUND, "")


def _floor(node: str) -> int:
    """A ground module's floor in GROUND_FLOORS (the ground's ui package: its top floor)."""
    return GROUND_FLOOR[node.split(".")[0]]


def _upward(me: str, target: str) -> str | None:
    """Why importing ``target`` from ``me`` goes up, or None."""
    (s1, f1), (s2, f2) = _storey(me), _storey(target)
    if s2 > s1:
        return f"{target} is in {STOREY_NAMES[s2]}, above {STOREY_NAMES[s1]}"
    if s1 == s2 == FEATURE and f1 != f2 and (f1, f2) not in FEATURE_EXCEPTIONS:
        return f"{target} is another feature ({f2}); features import the ground"
    if s1 == s2 == GROUND and _floor(target) > _floor(me):
        return f"{target} is on floor {_floor(target)} ({FLOOR_NAMES[_floor(target)]})"
    return None


def _is_module(folder: Path, name: str) -> bool:
    return (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists()


def _pmapviz_imports(path: Path):
    """(target node, line, inside a function?) for every import of a pmapviz module, top-level
    or not: an import tucked into a function still makes an edge (and can hide a cycle)."""
    tree = ast.parse(path.read_text())
    inner = {
        id(n)
        for f in ast.walk(tree)
        if isinstance(f, ast.FunctionDef | ast.AsyncFunctionDef)
        for n in ast.walk(f)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("pmapviz"):
            base = node.module.split(".")[1:]
            folder = ROOT.joinpath("pmapviz", *base)
            if folder.is_dir():  # from a package: each name that is a module of it
                targets = [
                    ".".join([*base, a.name]) if _is_module(folder, a.name) else ".".join(base)
                    for a in node.names
                ]
            else:
                targets = [".".join(base)]
        elif isinstance(node, ast.Import):
            targets = [a.name.split(".", 1)[1] for a in node.names if a.name.startswith("pmapviz.")]
        else:
            continue
        for target in targets:
            yield target.removesuffix(".__init__"), node.lineno, id(node) in inner


def _graph() -> dict[str, set[str]]:
    graph = {}
    for path in HOUSE:
        me = _node(path)
        graph[me] = {t for t, _, _ in _pmapviz_imports(path) if t != me}
    return graph


def test_every_ground_module_has_a_floor():
    """A new module of the ground takes a floor in GROUND_FLOORS (the README's table); a
    feature's or the app's floor is where it lives."""
    ground = [n for n in _graph() if _storey(n)[0] == GROUND]
    assert not [n for n in ground if n.split(".")[0] not in GROUND_FLOOR]


def test_every_feature_exception_is_used_and_explained():
    graph = _graph()
    used = {(_storey(a)[1], _storey(b)[1]) for a, ts in graph.items() for b in ts}
    assert set(FEATURE_EXCEPTIONS) <= used, set(FEATURE_EXCEPTIONS) - used
    assert all(len(why) > 20 for why in FEATURE_EXCEPTIONS.values())


@pytest.mark.parametrize("path", HOUSE, ids=_node)
def test_modules_import_only_their_floor_or_below(path):
    me = _node(path)
    up = [
        f"{why} (line {line})" for t, line, _ in _pmapviz_imports(path) if (why := _upward(me, t))
    ]
    assert not up, f"{me} imports upward: {up}"


@pytest.mark.parametrize("path", HOUSE, ids=_node)
def test_imports_between_pmapviz_modules_are_at_module_level(path):
    """JAX stays lazy inside functions; pmapviz modules never do, so no import hides a cycle.
    The package's ``__init__`` is the one exception: its PEP 562 ``__getattr__`` keeps
    ``import pmapviz`` from loading the planner."""
    inner = [f"{t} at line {line}" for t, line, inside in _pmapviz_imports(path) if inside]
    assert _node(path) == "__init__" or not inner, f"move to the top: {inner}"


def test_the_import_graph_has_no_cycle():
    graph = _graph()
    state: dict[str, int] = {}  # 1 on the path, 2 done

    def visit(node: str, path: list[str]) -> list[str] | None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path, node, nxt]
            if nxt not in state and (cycle := visit(nxt, [*path, node])):
                return cycle
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (cycle := visit(start, [])):
            pytest.fail("import cycle: " + " -> ".join(cycle))


def test_the_floor_checks_catch_an_upward_import_and_a_cycle(tmp_path, monkeypatch):
    """The checks themselves can fail: a settings module importing the planner is upward, a
    feature importing another feature too, and two modules importing each other a cycle."""
    fake = tmp_path / "pmapviz"
    (fake / "cluster").mkdir(parents=True)
    (fake / "meshes").mkdir()
    for d in (fake / "cluster", fake / "meshes"):
        (d / "__init__.py").write_text("")
    (fake / "settings.py").write_text("def f():\n    from pmapviz import planning\n")
    (fake / "planning.py").write_text("from pmapviz import settings\n")
    (fake / "cluster" / "clusterenv.py").write_text(
        "from pmapviz.features.meshes import meshownf\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    monkeypatch.setattr(sys.modules[__name__], "PKG", fake)
    monkeypatch.setattr(sys.modules[__name__], "FEATURES", ["cluster", "meshes", "tour"])
    found = list(_pmapviz_imports(fake / "settings.py"))
    assert found == [("planning", 2, True)]
    assert _upward(_node(fake / "settings.py"), "planning") is not None
    (fake / "meshes" / "meshownf.py").write_text("")
    env = fake / "cluster" / "clusterenv.py"
    assert list(_pmapviz_imports(env)) == [("meshes.meshownf", 1, False)]
    assert "another feature" in _upward(_node(env), "meshes.meshownf")
    assert _upward("tour.tour", "cluster.cluster") is None  # a declared exception
    assert "above" in _upward("planning", "cluster.clusterenv")
    monkeypatch.setattr(sys.modules[__name__], "HOUSE", sorted(fake.glob("*.py")))
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_the_import_graph_has_no_cycle()
