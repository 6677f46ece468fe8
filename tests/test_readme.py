"""The README's examples are promises: its planner snippet runs and every value it states in
a comment is what the code returns; every `plan` command in its Scripts section parses and
exits 0 (ok) or 1 (problems), never 2 (bad input)."""

import ast
import importlib
import re
import shlex

import pytest

from tests.conftest import ROOT

README = (ROOT / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_the_planner_snippet_returns_what_its_comments_say():
    (code,) = _blocks(_section("The planner API"), "python")
    lines, scope, checked = code.splitlines(), {}, 0
    for node in ast.parse(code).body:
        comment = lines[node.end_lineno - 1].partition("  # ")[2]
        if isinstance(node, ast.Expr) and comment:
            value = eval(compile(ast.Expression(node.value), "README", "eval"), scope)  # noqa: S307
            if "..." in comment:  # a long string, shown up to its first '...'
                assert str(value).startswith(comment.strip("'").split("...")[0].rstrip("; ")), (
                    ast.unparse(node),
                    value,
                )
            else:
                assert value == ast.literal_eval(comment), (ast.unparse(node), value, comment)
            checked += 1
        else:  # our own README's code, run as written
            exec(compile(ast.Module([node], []), "README", "exec"), scope)  # noqa: S102
    assert checked >= 4


def _plan_commands() -> list[list[str]]:
    (code,) = _blocks(_section("Scripts"), "bash")
    out = []
    for line in code.splitlines():
        argv = shlex.split(line, comments=True)
        if argv[1:4] == ["-m", "pmapviz", "plan"]:
            out.append(argv[3:])
    return out


@pytest.mark.parametrize("argv", _plan_commands(), ids=lambda a: " ".join(a)[:60])
def test_every_plan_command_in_the_readme_runs(argv, capsys):
    from pmapviz.app import cli

    code = cli.main(argv)
    said = capsys.readouterr()
    assert code in (0, 1), said.err
    assert said.out.strip() and not said.err.strip()


def test_the_readme_has_plan_commands_for_trees_and_expressions():
    joined = [" ".join(a) for a in _plan_commands()]
    assert any("--expr" in a and "{'w'" in a for a in joined)
    assert len(joined) >= 5


# ---------------------------------------------------------------- the layout cannot drift
def _layout_rows() -> dict[str, list[str]]:
    """The README's layout table: each row's package (``pmapviz/core/base/``) and the modules
    its second cell names (the backticked name that starts each item, outside parentheses)."""
    section = README[README.index("### How the code is laid out") :]
    section = section[: section.index("\n## ")]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `pmapviz/"):
            continue
        cells = [c.strip() for c in line.strip("|").split(" | ")]
        package, names, depth, item = cells[0].strip("`"), [], 0, ""
        for ch in cells[1] + ",":
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                if m := re.match(r"`(\w+)`", item.strip()):
                    names.append(m.group(1))
                item = ""
            else:
                item += ch
        rows[package] = names
    return rows


def _tree() -> dict[str, list[str]]:
    """Every package under pmapviz/ that holds modules, and its modules (not ``__init__``)."""
    pkg = ROOT / "pmapviz"
    tree = {}
    for init in sorted(pkg.rglob("__init__.py")):
        folder = init.parent
        if folder == pkg:
            continue
        modules = sorted(p.stem for p in folder.glob("*.py") if p.name != "__init__.py")
        if modules:
            tree[f"{folder.relative_to(ROOT).as_posix()}/"] = modules
    return tree


def test_the_readme_layout_names_every_package_and_module_in_the_tree():
    """A module added, moved or removed without its line in the README fails here; so does a
    README line for a module that is gone, and a floor or feature out of its declared order."""
    from pmapviz import core, features

    rows = _layout_rows()
    assert {p: sorted(m) for p, m in rows.items()} == _tree()
    assert all(len(m) == len(set(m)) for m in rows.values())
    floors = [p.split("/")[2] for p in rows if p.startswith("pmapviz/core/") and p.count("/") == 3]
    assert floors == [f for f in core.FLOORS if f in floors]
    order = [p.split("/")[2] for p in rows if p.startswith("pmapviz/features/")]
    assert list(dict.fromkeys(order)) == [f for f in features.ORDER if f in order]


def test_the_layout_check_fails_on_a_missing_module(monkeypatch):
    """The check above can fail: a module the README does not name shows up as a difference."""
    rows = _layout_rows()
    package = next(iter(rows))
    monkeypatch.setitem(rows, package, rows[package][1:])
    assert {p: sorted(m) for p, m in rows.items()} != _tree()


_WORDS = "one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
NUMBER_WORDS = {w: k for k, w in enumerate(_WORDS.split(" "), 1)}


def _step_counts(text: str) -> list[int]:
    """Every 'N steps' said of the tour in ``text`` (a line that names the tour)."""
    return [
        NUMBER_WORDS.get(m.group(1).lower(), -1)
        for line in text.splitlines()
        if "tour" in line.lower()
        for m in re.finditer(r"\b([A-Za-z]+) steps\b", line)
        if m.group(1).lower() in NUMBER_WORDS
    ]


def test_every_count_of_the_tours_steps_is_the_number_of_steps():
    """The README and the tour package say how many steps the tour has: both are its STEPS."""
    import pmapviz.features.tour as tour
    from pmapviz.features.tour import toursteps

    said = _step_counts(README) + _step_counts(tour.__doc__)
    assert said and set(said) == {len(toursteps.STEPS)}, said
    assert _step_counts("the tour: thirteen steps") == [13]  # the reader finds a wrong one


def test_every_path_and_module_the_readme_names_exists():
    """A file path (``pmapviz/...py``, ``tests/...py``, ``benchmarks/...py``) or a dotted module
    (``pmapviz.core.planning.planning.Plan``: some prefix of it a module or package) named in the
    README is there: a module moved without its docs fails here."""
    paths = set(re.findall(r"\b((?:pmapviz|tests|benchmarks|harness)/[\w/]+\.py)\b", README))
    missing = [p for p in sorted(paths) if not (ROOT / p).exists()]
    dotted = set(re.findall(r"\bpmapviz(?:\.\w+)+", README))

    def exists(name: str) -> bool:  # the longest module prefix, imported, then its attributes
        parts = name.split(".")
        k = max(
            k
            for k in range(1, len(parts) + 1)
            if ROOT.joinpath(*parts[:k]).with_suffix(".py").exists()
            or (ROOT.joinpath(*parts[:k]) / "__init__.py").exists()
        )
        obj = importlib.import_module(".".join(parts[:k]))
        for attr in parts[k:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True

    missing += [d for d in sorted(dotted) if not exists(d)]
    assert paths and dotted and not missing, missing
