"""python -m pmapviz lesson: a lesson written from a recorded path's links and read back, each
step checked through its page's schemas; an old or changed file is one line and exit 2."""

import json

from pmapviz.app import cli, cmd_lesson
from pmapviz.core.base import room


def test_a_path_written_and_read_back(tmp_path):
    path = tmp_path / "path.txt"
    path.write_text("/tour?step=4\n\nhttp://host:8501/tour?step=4&answer=fit-devices&present=1\n")
    out = tmp_path / "lesson.json"
    rc, said, err = cli.run_here(
        [
            "lesson",
            "--devices",
            "8",
            "--out",
            str(out),
            "--links",
            str(path),
            "--link",
            "/explorer?fn=add",
        ]
    )
    assert rc == 0, err
    assert said.strip() == f"wrote a lesson of 3 step(s) to {out}"
    data = json.loads(out.read_text())
    assert data["version"] == 1 and data["devices"] == 8
    assert data["steps"][1] == {"page": "tour", "query": {"answer": "fit-devices", "step": "4"}}
    rc, said, err = cli.run_here(["lesson", str(out)])
    assert rc == 0 and said.splitlines()[1:] == [
        "  1. /tour?step=4",
        "  2. /tour?answer=fit-devices&step=4",
        "  3. /explorer?fn=add",
    ]
    rc, said, _ = cli.run_here(["lesson", str(out), "--json"])
    assert json.loads(said) == data


def test_old_changed_or_missing_files_and_bad_links_are_one_line_and_exit_2(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"format": "pmapviz-lesson", "version": 0, "steps": []}))
    changed = tmp_path / "changed.json"
    step = {"page": "tour", "query": {"step": "<b>1</b>"}}
    changed.write_text(
        json.dumps({"format": "pmapviz-lesson", "version": 1, "devices": 8, "steps": [step]})
    )
    for argv, says in (
        (["lesson", str(old)], "from another version of pmapviz"),
        (["lesson", str(changed)], "changed or damaged: step 1 (Guided tour)"),
        (["lesson", str(tmp_path / "none.json")], "Cannot read"),
        (["lesson", "--out", "-", "--link", "/nowhere?x=1"], "names no page"),
        (["lesson", "--out", "-"], "No steps"),
        (["lesson"], "Give a lesson file to read"),
    ):
        rc, said, err = cli.run_here(argv)
        assert rc == 2 and said == "" and says in err and len(err.strip().splitlines()) == 1, err


def test_a_link_is_a_step_without_the_sessions_own_keys():
    step = cmd_lesson.step_of("https://room:8501/collectives?c=psum&follow=1&on=cpu&lead=x")
    assert step == room.Step("collectives", (("c", "psum"),))
    assert cmd_lesson.link_of(step) == "/collectives?c=psum"
