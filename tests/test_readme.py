"""The README's examples are promises: its planner snippet runs and every value it states in
a comment is what the code returns; every `plan` command in its Scripts section parses and
exits 0 (ok) or 1 (problems), never 2 (bad input)."""

import ast
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
