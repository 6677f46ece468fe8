"""The README's and the docs' examples are promises, and the docs cannot drift from the code.

- docs/notebook.md's planner snippet runs and every value it states in a comment is what the
  code returns; the README's notebook lines run;
- every `plan` command in docs/cli.md's "Commands" and the README's command line parses and
  exits 0 (ok) or 1 (problems), never 2 (bad input);
- docs/architecture.md's layout table names every package and module in the tree, in the
  declared order of floors and features;
- in the README and every docs page: every count of the tour's steps is its STEPS, every path
  and dotted pmapviz name exists, every relative link (pages, images, anchors) resolves, and
  every measured figure sits in a section that names the command that measures it;
- every docs page is linked from the README, and the README is at most 250 lines.
"""

import ast
import importlib
import re
import shlex
from pathlib import Path

import pytest

from tests.conftest import ROOT

README_PATH = ROOT / "README.md"
DOCS_DIR = ROOT / "docs"
DOC_PATHS = sorted(DOCS_DIR.glob("*.md"))
README = README_PATH.read_text()
TEXTS = {p: p.read_text() for p in [README_PATH, *DOC_PATHS]}  # the README and every docs page
MAX_README_LINES = 250


def _doc(name: str) -> str:
    return (DOCS_DIR / name).read_text()


def _section(text: str, title: str) -> str:
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start:] if end < 0 else text[start:end]


def _blocks(text: str, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", text, flags=re.S)


def test_the_docs_folder_has_pages():
    assert len(DOC_PATHS) >= 10, DOC_PATHS


# ---------------------------------------------------------------- the examples run
def test_the_planner_snippet_returns_what_its_comments_say():
    (code,) = _blocks(_section(_doc("notebook.md"), "The planner API"), "python")
    lines, scope, checked = code.splitlines(), {}, 0
    for node in ast.parse(code).body:
        comment = lines[node.end_lineno - 1].partition("  # ")[2]
        if isinstance(node, ast.Expr) and comment:
            value = eval(compile(ast.Expression(node.value), "docs", "eval"), scope)  # noqa: S307
            if "..." in comment:  # a long string, shown up to its first '...'
                assert str(value).startswith(comment.strip("'").split("...")[0].rstrip("; ")), (
                    ast.unparse(node),
                    value,
                )
            else:
                assert value == ast.literal_eval(comment), (ast.unparse(node), value, comment)
            checked += 1
        else:  # our own docs' code, run as written
            exec(compile(ast.Module([node], []), "docs", "exec"), scope)  # noqa: S102
    assert checked >= 4


def test_the_readmes_notebook_lines_run_and_draw():
    """The README's notebook cell runs as written; each call's view has text to show (this
    process's JAX has the 8 devices the cell asks for, so devices(8) takes effect)."""
    (code,) = _blocks(_section(README, "In a notebook"), "python")
    views, scope = [], {}
    for node in ast.parse(code).body:
        if isinstance(node, ast.Expr):
            views.append(eval(compile(ast.Expression(node.value), "README", "eval"), scope))  # noqa: S307
        else:
            exec(compile(ast.Module([node], []), "README", "exec"), scope)  # noqa: S102
    assert len(views) >= 3
    assert all(str(v).strip() for v in views), views
    assert "8 " in str(views[0]) and "Matches numpy" in str(views[-1])


def _plan_commands() -> list[list[str]]:
    """The ``plan`` commands of docs/cli.md's "Commands" and of the README's command line."""
    (code,) = _blocks(_section(_doc("cli.md"), "Commands"), "bash")
    (readme,) = _blocks(_section(README, "On the command line"), "bash")
    out = []
    for line in (code + readme).splitlines():
        argv = shlex.split(line, comments=True)
        if argv[1:4] == ["-m", "pmapviz", "plan"]:
            out.append(argv[3:])
    return out


@pytest.mark.parametrize("argv", _plan_commands(), ids=lambda a: " ".join(a)[:60])
def test_every_plan_command_in_the_docs_runs(argv, capsys):
    from pmapviz.app import cli

    code = cli.main(argv)
    said = capsys.readouterr()
    assert code in (0, 1), said.err
    assert said.out.strip() and not said.err.strip()


def test_the_docs_have_plan_commands_for_trees_and_expressions():
    joined = [" ".join(a) for a in _plan_commands()]
    assert any("--expr" in a and "{'w'" in a for a in joined)
    assert len(joined) >= 5


# ---------------------------------------------------------------- the layout cannot drift
def _layout_rows() -> dict[str, list[str]]:
    """docs/architecture.md's layout table: each row's package (``pmapviz/core/base/``) and the
    modules its second cell names (the backticked name that starts each item, outside
    parentheses)."""
    section = _section(_doc("architecture.md"), "How the code is laid out")
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


def test_the_layout_table_names_every_package_and_module_in_the_tree():
    """A module added, moved or removed without its line in docs/architecture.md fails here;
    so does a line for a module that is gone, and a floor or feature out of its declared order."""
    from pmapviz import core, features

    rows, tree = _layout_rows(), _tree()
    table = {p: sorted(m) for p, m in rows.items()}
    differ = {
        p: (table.get(p), tree.get(p)) for p in {*table, *tree} if table.get(p) != tree.get(p)
    }
    assert not differ, f"docs/architecture.md's table (its modules, the tree's): {differ}"
    assert all(len(m) == len(set(m)) for m in rows.values())
    floors = [p.split("/")[2] for p in rows if p.startswith("pmapviz/core/") and p.count("/") == 3]
    assert floors == [f for f in core.FLOORS if f in floors]
    order = [p.split("/")[2] for p in rows if p.startswith("pmapviz/features/")]
    assert list(dict.fromkeys(order)) == [f for f in features.ORDER if f in order]


def test_the_layout_check_fails_on_a_missing_module(monkeypatch):
    """The check above can fail: a module the table does not name shows up as a difference."""
    rows = _layout_rows()
    package = next(iter(rows))
    monkeypatch.setitem(rows, package, rows[package][1:])
    assert {p: sorted(m) for p, m in rows.items()} != _tree()


def test_the_top_level_layout_names_the_page_folder_and_every_page():
    """The pages live in the top-level pages/ folder, one file per page named after its URL."""
    from pmapviz.app.page_registry import PAGES

    top = _blocks(_section(_doc("architecture.md"), "The top level"), "")[0]
    assert re.search(r"^pages/ ", top, flags=re.M) and re.search(r"^app\.py ", top, flags=re.M)
    assert sorted(p.stem for p in (ROOT / "pages").glob("[!_]*.py")) == sorted(
        p.url_path for p in PAGES
    )


def test_the_readmes_page_table_and_docs_pages_name_every_page_in_the_menus_order():
    """One row per page of the registry in the README's table, and one section per page in
    docs/pages.md, both in the menu's order: a page added without its line fails here."""
    from pmapviz.app.page_registry import PAGES

    titles = [p.title for p in PAGES]
    rows = re.findall(r"^\| ([^|]+?) \|", _section(README, "The pages"), flags=re.M)
    assert rows[1:] == titles  # the header row first
    headings = re.findall(r"^## (.+)$", _doc("pages.md"), flags=re.M)
    assert [
        next((t for t in titles if h.startswith(t)), h) for h in headings if h != "On every page"
    ] == titles


# ---------------------------------------------------------------- counts, paths and names
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
    """The README, the docs and the tour package say how many steps the tour has: all are its
    STEPS."""
    import pmapviz.features.tour as tour
    from pmapviz.features.tour import toursteps

    said = [k for text in TEXTS.values() for k in _step_counts(text)] + _step_counts(tour.__doc__)
    assert said and set(said) == {len(toursteps.STEPS)}, said
    assert _step_counts("the tour: thirteen steps") == [13]  # the reader finds a wrong one


_PATH = re.compile(
    r"(?<![\w/.-])((?:pmapviz|tests|benchmarks|harness|pages|examples|docs)/[\w/.-]*\w"
    r"\.(?:py|ipynb|md|txt|json|png|gz|toml))\b"
)


def _mapped_packages() -> dict[str, Path]:
    """The packages the wheel maps from another folder (setup.py's ``package_dir``):
    ``pmapviz.app.ui.pages`` is the checkout's pages/."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "package_dir":
            return {k: ROOT / v for k, v in ast.literal_eval(node.value).items()}
    return {}


def _name_exists(name: str) -> bool:
    """The longest module prefix of a dotted name, imported, then its attributes; a package the
    wheel maps from another folder is looked up in that folder."""
    for package, folder in _mapped_packages().items():
        if name == package or name.startswith(package + "."):
            rest = name[len(package) :].lstrip(".").split(".")
            return folder.is_dir() and (not rest[0] or (folder / f"{rest[0]}.py").exists())
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


@pytest.mark.parametrize("path", list(TEXTS), ids=lambda p: p.name)
def test_every_path_and_module_the_docs_name_exists(path):
    """A file path (``pmapviz/...py``, ``pages/...py``, ``tests/...py``, ``benchmarks/...py``)
    or a dotted module (``pmapviz.core.planning.planning.Plan``: some prefix of it a module or
    package) named in the README or a docs page is there: a module moved without its docs fails
    here."""
    text = TEXTS[path]
    missing = [p for p in sorted(set(_PATH.findall(text))) if not (ROOT / p).exists()]
    dotted = set(re.findall(r"\bpmapviz(?:\.\w+)+", text))
    missing += [d for d in sorted(dotted) if not _name_exists(d)]
    assert not missing, missing


def test_the_docs_name_paths_and_modules_and_the_check_finds_a_wrong_one():
    joined = "\n".join(TEXTS.values())
    assert len(set(_PATH.findall(joined))) >= 20 and len(re.findall(r"\bpmapviz\.\w", joined)) >= 20
    assert _PATH.findall("see pages/explorer.py, not pmapviz/app/ui/pages/explorer.py") == [
        "pages/explorer.py",
        "pmapviz/app/ui/pages/explorer.py",
    ]
    assert not (ROOT / "pmapviz/app/ui/pages/explorer.py").exists()  # a stale path is caught
    assert _name_exists("pmapviz.app.ui.pages.explorer")  # the wheel's name for pages/explorer.py
    assert not _name_exists("pmapviz.app.ui.pages.nowhere")
    assert not _name_exists("pmapviz.core.planning.planning.NoSuchPlan")


# ---------------------------------------------------------------- links
def _without_code_blocks(text: str) -> str:
    """``text`` without fenced code blocks (a bash comment there is no heading)."""
    return re.sub(r"```.*?```", "", text, flags=re.S)


def _links(text: str) -> list[str]:
    """Every link and image target in ``text``'s prose (in code, a link is no link)."""
    prose = re.sub(r"`[^`]*`", "", _without_code_blocks(text))
    return re.findall(r"!?\[[^\]\n]*\]\(([^)\s]+)\)", prose)


def _slug(heading: str) -> str:
    """A heading's anchor as GitHub writes it: lower case, punctuation dropped, spaces to '-'."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _resolves(path: Path, target: str) -> bool:
    """A link's target, relative to the file ``path`` that holds it, is there: the file, and
    for a Markdown file the heading its ``#anchor`` names. Other schemes (https:) pass."""
    if re.match(r"^[a-z]+:", target):
        return True
    file, _, anchor = target.partition("#")
    where = (path.parent / file).resolve() if file else path
    if not where.exists() or not anchor or where.suffix != ".md":
        return where.exists()
    headings = re.findall(r"^#{1,6} (.+)$", _without_code_blocks(where.read_text()), flags=re.M)
    return anchor in {_slug(h) for h in headings}


def _broken_links(path: Path, text: str) -> list[str]:
    return [t for t in _links(text) if not _resolves(path, t)]


@pytest.mark.parametrize("path", list(TEXTS), ids=lambda p: p.name)
def test_every_relative_link_and_image_resolves(path):
    """Every page, image and anchor a link names is there, relative to the file that links it
    (an image in docs/ is ../tests/e2e/screenshots/...)."""
    assert not _broken_links(path, TEXTS[path])


def test_the_link_check_finds_a_broken_link_and_anchor():
    fake = DOCS_DIR / "made-up.md"
    text = (
        "[ok](pods.md#slice-names-libtpus-and-clouds) ![no](tests/e2e/screenshots/home.png) "
        "[gone](nowhere.md) [bad anchor](options.md#no-such-heading) `[code](not-a-link.md)`"
    )
    assert _broken_links(fake, text) == [
        "tests/e2e/screenshots/home.png",  # from docs/ an image is ../tests/...
        "nowhere.md",
        "options.md#no-such-heading",
    ]


def test_every_docs_page_is_linked_from_the_readme():
    linked = {
        (ROOT / t.partition("#")[0]).resolve() for t in _links(README) if not t.startswith("#")
    }
    assert DOC_PATHS and not [p.name for p in DOC_PATHS if p.resolve() not in linked]


def test_the_readme_is_short_and_keeps_the_two_commands():
    """At most 250 lines, the two commands verbatim (CI's .ci/run copies the test command)."""
    assert len(README.splitlines()) <= MAX_README_LINES, len(README.splitlines())
    ci = (ROOT / ".ci" / "run").read_text()
    test_command = next(line for line in ci.splitlines() if line.startswith("python3 -m venv"))
    commands = _blocks(_section(README, "Two commands"), "bash")
    assert [c.strip() for c in commands] == [
        "python3 -m venv .venv && .venv/bin/pip install -r requirements.txt && "
        ".venv/bin/streamlit run app.py -- --devices 8",
        test_command,
    ]


# ---------------------------------------------------------------- figures and their commands
# A measured figure: a number with a unit of time, memory or bandwidth (1.49 s, 0.7 ms, 2.29 GiB,
# 43 GB/s, 2.7 CPU-seconds), outside inline code (`--max-bytes 2G`, `--timeout 120` are flags).
_FIGURE = re.compile(
    r"(?<![\w.])(\d[\d,]*(?:\.\d+)?)\s?"
    r"(ns|us|µs|ms|s|seconds?|minutes?|hours?|CPU-s(?:econds)?|[KMGT]i?B(?:/s)?)(?![\w/])"
)
# ... unless it is a limit, not a measurement: one of these words among the three before it, in
# its own clause ("default 120 s", "at most 280 s", "goal: under 2 s")
_LIMIT_WORDS = {
    "default",
    "most",
    "least",
    "limit",
    "max",
    "maximum",
    "minimum",
    "up",
    "under",
    "below",
    "above",
    "within",
    "budget",
    "timeout",
    "goal",
}


def _commands_pattern() -> re.Pattern:
    from pmapviz.app import cli

    names = "|".join(cli.COMMANDS)
    return re.compile(
        r"benchmarks/\w+\.py|tests/[\w/]*test_\w+\.py|\.ci/run|\bpytest\b"
        rf"|(?<![\w.])(?:python -m )?pmapviz (?:{names})\b"
    )


def _sections(text: str) -> list[tuple[str, str]]:
    """``text`` cut at its headings (outside code blocks): (heading, body) pairs."""
    out, heading, body, fenced = [], "(top)", [], False
    for line in text.splitlines():
        fenced ^= line.startswith("```")
        if not fenced and re.match(r"#{1,6} ", line):
            out.append((heading, "\n".join(body)))
            heading, body = line.lstrip("# "), []
        else:
            body.append(line)
    return [*out, (heading, "\n".join(body))]


def _unmeasured_figures(text: str) -> list[str]:
    """Each figure in a section that names no measuring command: a benchmark script, a test
    file (``tests/.../test_*.py``), ``pytest``, ``.ci/run`` or a pmapviz command, in inline code
    or a code block."""
    commands = _commands_pattern()
    found = []
    for heading, body in _sections(text):
        blocks = re.findall(r"```.*?```", body, flags=re.S)
        rest = re.sub(r"```.*?```", " ", body, flags=re.S)
        if commands.search(" ".join([*re.findall(r"`([^`]+)`", rest), *blocks])):
            continue
        prose = " ".join([re.sub(r"`[^`]*`|https?://\S+", "", rest), *blocks])  # outputs count
        for m in _FIGURE.finditer(prose):
            clause = re.split(r"[,;:.()]", prose[max(0, m.start() - 40) : m.start()])[-1]
            if not _LIMIT_WORDS & {w.lower() for w in re.findall(r"[A-Za-z]+", clause)[-3:]}:
                found.append(f"{heading}: {m.group(0)}")
    return found


@pytest.mark.parametrize("path", list(TEXTS), ids=lambda p: p.name)
def test_every_measured_figure_names_the_command_that_measures_it(path):
    """A time, size or bandwidth stated in a section of the README or a docs page comes with the
    command that measures it, in the same section, so a reader can measure it again."""
    assert not _unmeasured_figures(TEXTS[path])


def test_the_figure_check_finds_a_figure_without_its_command():
    made_up = (
        "# Speed\n\nHome loads in 1.49 s and the pool peaks at 2.29 GiB (43 GB/s).\n"
        "Under its budget, it took 3.2 s (`tests/fakes.py`: no test, no command).\n\n"
        "## Limits\n\nThe time limit is at most 280 s (default 120 s); `--max-bytes 512MiB`.\n\n"
        "## Measured\n\nThe server answered in 0.4 s (`benchmarks/responsiveness.py`).\n\n"
        "## Measured by a command that does not exist\n\nIt took 3 ms (`pmapviz nosuch`).\n"
    )
    assert _unmeasured_figures(made_up) == [
        "Speed: 1.49 s",
        "Speed: 2.29 GiB",
        "Speed: 43 GB/s",
        "Speed: 3.2 s",  # a limit word in another clause exempts nothing
        "Measured by a command that does not exist: 3 ms",
    ]
    assert len(_FIGURE.findall("\n".join(TEXTS.values()))) >= 20  # the docs do state figures
