"""Paths a person names: a folder to read, a file to write, refused before any work."""

import os
import types

import pytest

from pmapviz.core.base import pathparse, valueparse


def test_paths_a_folder_to_read_and_a_file_to_write(tmp_path):
    assert pathparse.parse_folder(f" {tmp_path} ", "--reports") == str(tmp_path.resolve())
    for bad in ("", "a\x00b", "x" * 5000, str(tmp_path / "missing")):
        with pytest.raises(valueparse.SettingError):
            pathparse.parse_folder(bad, "--reports")
    assert pathparse.parse_output_path(str(tmp_path / "r.json"), "--report") == tmp_path / "r.json"
    with pytest.raises(valueparse.SettingError, match="is a folder"):
        pathparse.parse_output_path(str(tmp_path), "--report")
    with pytest.raises(valueparse.SettingError, match="its folder does not exist"):
        pathparse.parse_output_path(str(tmp_path / "no" / "r.json"), "--report")


def test_a_file_to_write_is_refused_before_any_work_with_the_path_and_a_fix(tmp_path):
    """Issue 36: `bench --json /tmp` ran the whole sweep, then died with IsADirectoryError."""
    (tmp_path / "old.json").write_text("{}")
    (tmp_path / "a_file").write_text("")
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "target.json")  # its folder exists
    for ok in ("new.json", "old.json", "dangling.json"):
        assert pathparse.parse_output_path(str(tmp_path / ok), "--json") == tmp_path / ok
    cases = {
        str(tmp_path): f"--json `{tmp_path}` is a folder: give a file name inside it, e.g. "
        f"`{tmp_path}/bench.json`.",
        f"{tmp_path}/no/b.json": f"--json `{tmp_path}/no/b.json`: its folder does not exist: "
        f"create `{tmp_path}/no` first, or name a file in a folder that exists.",
        f"{tmp_path}/a_file/b.json": f"--json `{tmp_path}/a_file/b.json`: `{tmp_path}/a_file` "
        "is a file, not a folder: name a file inside a folder.",
        f"{tmp_path}/loop.json": f"--json `{tmp_path}/loop.json` is a link that loops: name "
        "another file.",
    }
    for text, said in cases.items():
        with pytest.raises(valueparse.SettingError) as err:
            pathparse.parse_output_path(text, "--json", "bench.json")
        assert str(err.value) == said
    deep = tmp_path / ("d" * 150)
    deep.mkdir()
    with pytest.raises(valueparse.SettingError, match=r"e\.g\. `\.\.\.d+/report\.json`\.$"):
        pathparse.parse_output_path(str(deep), "--report")  # a long path keeps its end


def test_a_file_to_write_where_this_user_may_not_write(tmp_path, monkeypatch):
    """What os.access says decides: an existing file, or a new file's folder, not writable."""
    (tmp_path / "old.json").write_text("{}")
    no_access = types.SimpleNamespace(
        access=lambda path, mode: False, W_OK=os.W_OK, X_OK=os.X_OK, path=os.path
    )  # pathparse's own view of os, nobody else's
    monkeypatch.setattr(pathparse, "os", no_access)
    with pytest.raises(valueparse.SettingError) as err:
        pathparse.parse_output_path(str(tmp_path / "old.json"), "--report")
    said = "exists and is not writable by this user: make it writable (chmod u+w) or name "
    assert str(err.value) == f"--report `{tmp_path}/old.json` {said}another file."
    with pytest.raises(valueparse.SettingError) as err:
        pathparse.parse_output_path(str(tmp_path / "new.json"), "--report")
    said = "is not writable by this user: name a file in a folder you can write to."
    assert str(err.value) == f"--report `{tmp_path}/new.json`: its folder `{tmp_path}` {said}"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere: os.access says so too")
def test_a_read_only_folder_and_file_are_refused(tmp_path):
    """A real read-only folder and file (chmod), for a user who is not root; as root, where
    os.access says writable and the write would succeed, the test above stands in for it."""
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "old.json").write_text("{}")
    (folder / "old.json").chmod(0o444)
    folder.chmod(0o555)
    try:
        with pytest.raises(valueparse.SettingError, match="its folder .* is not writable"):
            pathparse.parse_output_path(str(folder / "new.json"), "--json")
        with pytest.raises(valueparse.SettingError, match="exists and is not writable"):
            pathparse.parse_output_path(str(folder / "old.json"), "--json")
    finally:
        folder.chmod(0o755)


def test_a_file_to_write_that_cannot_be_looked_at_is_one_line(tmp_path, monkeypatch):
    def denied(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(
        pathparse, "os", types.SimpleNamespace(path=types.SimpleNamespace(realpath=denied))
    )
    with pytest.raises(valueparse.SettingError) as err:
        pathparse.parse_output_path(str(tmp_path / "x.json"), "--json")
    assert str(err.value) == (
        f"--json `{tmp_path}/x.json` cannot be checked (Permission denied): "
        "name a file in a folder you can write to."
    )
