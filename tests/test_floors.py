"""The house: every module's floor read from its path, imports only downward, no cycle.

Three storeys, from where a module lives: the core (``pmapviz/core/<floor>/``), the features
(``pmapviz/features/<feature>/``) and the app (``pmapviz/app/``, its ``pages/``, ``app.py``, the
package's ``__init__`` and ``__main__``). Inside the core, a floor is its package, in the order
``pmapviz.core.FLOORS`` declares; among the features, ``pmapviz.features.ORDER``. A module
imports from its own storey's floor or below (the core never imports a feature, a feature never
imports the app or a later feature), and a module outside a ``ui`` package never imports one.
Nothing else is written down: no table of modules to keep.
"""

import ast
import sys
from pathlib import Path

import pytest

from pmapviz import core, features
from tests.conftest import ROOT

PKG = ROOT / "pmapviz"
FLOORS = core.FLOORS
ORDER = features.ORDER
CORE, FEATURE, APP = 0, 1, 2
STOREYS = ("the core", "a feature", "the app")
MAX_TOP_ENTRIES = 12


def _house() -> list[Path]:
    return [*sorted(PKG.rglob("*.py")), ROOT / "app.py"]


def _node(path: Path) -> str:
    """A module's name in the import graph, relative to the package: pmapviz/core/base/settings.py
    -> core.base.settings, pmapviz/features/cluster/__init__.py -> features.cluster, app.py ->
    app.py, pages/x.py -> pages.x."""
    if path.name == "app.py" and path.parent == ROOT:
        return "app.py"
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[1:] if rel.parts[0] == "pmapviz" else rel.parts
    return ".".join(parts).removesuffix(".__init__")


def _place(node: str) -> tuple[int, int]:
    """(storey, floor in that storey) of a node, from its path alone. The two packages that
    declare the orders (``core``, ``features``) hold no code: floor -1, below everything."""
    parts = node.split(".")
    if node in ("core", "features"):
        return CORE, -1
    if parts[0] == "core":
        return CORE, FLOORS.index(parts[1])
    if parts[0] == "features":
        return FEATURE, ORDER.index(parts[1])
    return APP, 0


def _in_ui(node: str) -> bool:
    return "ui" in node.split(".")[:-1] or node.endswith(".ui")


def _upward(me: str, target: str) -> str | None:
    """Why importing ``target`` from ``me`` goes up, or None."""
    (s1, f1), (s2, f2) = _place(me), _place(target)
    if s2 > s1:
        return f"{target} is in {STOREYS[s2]}, above {STOREYS[s1]}"
    if s1 == s2 == CORE and f2 > f1:
        return f"{target} is on the core's floor {FLOORS[f2]}, above {FLOORS[f1]}"
    if s1 == s2 == FEATURE and f2 > f1:
        return f"{target} is the feature {ORDER[f2]}, after {ORDER[f1]} in features.ORDER"
    if s1 < APP and _in_ui(target) and not _in_ui(me):
        return f"{target} is a ui module (Streamlit), and {me} is not"
    return None


def _is_module(folder: Path, name: str) -> bool:
    return (folder / f"{name}.py").exists() or (folder / name / "__init__.py").exists()


def _targets(node: ast.ImportFrom | ast.Import) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name.split(".", 1)[1] for a in node.names if a.name.startswith("pmapviz.")]
    if not (node.module and node.module.split(".")[0] == "pmapviz" and node.level == 0):
        return []
    base = node.module.split(".")[1:]
    folder = PKG.joinpath(*base)
    if folder.is_dir():  # from a package: each name that is a module of it
        return [
            ".".join([*base, a.name]) if _is_module(folder, a.name) else ".".join(base)
            for a in node.names
        ]
    return [".".join(base)]


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
        if isinstance(node, ast.ImportFrom | ast.Import):
            for target in _targets(node):
                yield target.removesuffix(".__init__"), node.lineno, id(node) in inner


def _graph() -> dict[str, set[str]]:
    return {_node(p): {t for t, _, _ in _pmapviz_imports(p) if t != _node(p)} for p in _house()}


def _packages(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir() if (p / "__init__.py").exists()}


def test_the_declared_orders_name_every_package_once():
    """core.FLOORS names each folder of pmapviz/core once, features.ORDER each of
    pmapviz/features: a new package takes its place in the order or the suite fails."""
    assert sorted(FLOORS) == sorted(_packages(PKG / "core")) and len(set(FLOORS)) == len(FLOORS)
    assert sorted(ORDER) == sorted(_packages(PKG / "features")) and len(set(ORDER)) == len(ORDER)


def test_the_top_is_small_and_nothing_is_left_flat():
    """pmapviz/ holds at most MAX_TOP_ENTRIES entries; every module lives in a floor of the
    core, in a feature or in the app (core/ and features/ hold only their declarations)."""
    top = [p.name for p in PKG.iterdir() if p.name != "__pycache__"]
    assert len(top) <= MAX_TOP_ENTRIES, sorted(top)
    assert sorted(p.name for p in PKG.glob("*.py")) == ["__init__.py", "__main__.py"]
    for folder in (PKG / "core", PKG / "features"):
        assert [p.name for p in folder.glob("*.py")] == ["__init__.py"], folder
        others = {p.name for p in folder.iterdir()} - _packages(folder)
        assert not others - {"__init__.py", "__pycache__"}, others


@pytest.mark.parametrize("path", _house(), ids=_node)
def test_modules_import_only_their_floor_or_below(path):
    me = _node(path)
    up = [
        f"{why} (line {line})" for t, line, _ in _pmapviz_imports(path) if (why := _upward(me, t))
    ]
    assert not up, f"{me} imports upward: {up}"


@pytest.mark.parametrize("path", _house(), ids=_node)
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
    """The checks themselves can fail: a core module importing a higher floor, the core
    importing a feature, a feature importing a later one, logic importing a ui module, and two
    modules importing each other (a cycle)."""
    fake = tmp_path / "pmapviz"
    for d in ("core/base", "core/planning", "features/cluster", "features/meshes/ui"):
        (fake / d).mkdir(parents=True)
        (fake / d / "__init__.py").write_text("")
    base = fake / "core" / "base" / "settings.py"
    base.write_text("def f():\n    from pmapviz.core.planning import planning\n")
    (fake / "core" / "planning" / "planning.py").write_text(
        "from pmapviz.core.base import settings\n"
    )
    env = fake / "features" / "cluster" / "clusterenv.py"
    env.write_text("from pmapviz.features.meshes import meshownf\n")
    (fake / "features" / "meshes" / "meshownf.py").write_text(
        "from pmapviz.features.meshes.ui import mesh_form\n"
    )
    (fake / "features" / "meshes" / "ui" / "mesh_form.py").write_text("")
    mod = sys.modules[__name__]
    monkeypatch.setattr(mod, "ROOT", tmp_path)
    monkeypatch.setattr(mod, "PKG", fake)
    monkeypatch.setattr(mod, "FLOORS", ("base", "planning"))
    monkeypatch.setattr(mod, "ORDER", ("cluster", "meshes"))
    assert list(_pmapviz_imports(base)) == [("core.planning.planning", 2, True)]
    assert "above base" in _upward(_node(base), "core.planning.planning")
    assert _upward("core.planning.planning", "core.base.settings") is None
    assert list(_pmapviz_imports(env)) == [("features.meshes.meshownf", 1, False)]
    assert "after cluster" in _upward(_node(env), "features.meshes.meshownf")
    assert _upward("features.meshes.meshownf", "features.cluster.clusterenv") is None
    assert "above the core" in _upward("core.base.settings", "features.cluster.clusterenv")
    assert "above a feature" in _upward("features.cluster.clusterenv", "app.cli")
    assert "ui module" in _upward("features.meshes.meshownf", "features.meshes.ui.mesh_form")
    assert _upward("features.meshes.ui.mesh_form", "features.meshes.meshownf") is None
    monkeypatch.setattr(mod, "_house", lambda: sorted(fake.rglob("*.py")))
    with pytest.raises(pytest.fail.Exception, match="import cycle"):
        test_the_import_graph_has_no_cycle()
