"""Bounded folder walks (pmapviz.core.base.folders): level by level, never through a linked folder,
stopped by depth, count or time, and saying which."""

import os

from pmapviz.core.base import folders


def _tree(root):
    (root / "a" / "b" / "c").mkdir(parents=True)
    (root / "top.txt").write_text("x")
    (root / "a" / "mid.txt").write_text("x")
    (root / "a" / "b" / "c" / "deep.txt").write_text("x")
    os.symlink(root / "a", root / "link")  # a linked folder: listed, never entered


def test_a_walk_sees_every_level_and_never_enters_a_link(tmp_path):
    _tree(tmp_path)
    walk = folders.Walk()
    names = [e.name for e in folders.entries(str(tmp_path), walk, 10, 100)]
    assert sorted(names) == ["a", "b", "c", "deep.txt", "link", "mid.txt", "top.txt"]
    assert names.index("top.txt") < names.index("mid.txt") < names.index("deep.txt")
    assert walk.stopped is None and walk.levels == 4 and walk.looked == 7


def test_a_walk_stops_at_its_depth_count_and_time_and_says_which(tmp_path):
    _tree(tmp_path)
    walk = folders.Walk()
    assert "deep.txt" not in [e.name for e in folders.entries(str(tmp_path), walk, 2, 100)]
    assert walk.stopped == "it looks 2 levels down at most"
    walk = folders.Walk()
    assert len(list(folders.entries(str(tmp_path), walk, 10, 3))) == 3
    assert walk.stopped == "the most it looks at" and walk.looked == 3
    walk = folders.Walk()
    assert list(folders.entries(str(tmp_path), walk, 10, 100, seconds=-1)) == []
    assert walk.stopped == "it looks for -1 s at most"


def test_unreadable_and_missing_folders_hold_nothing(tmp_path):
    walk = folders.Walk()
    assert list(folders.entries(str(tmp_path / "none"), walk, 3, 10)) == []
    assert walk.stopped is None
    os.symlink(tmp_path / "loop", tmp_path / "loop")
    (entry,) = list(folders.entries(str(tmp_path), folders.Walk(), 3, 10))
    assert not folders.is_file(entry) and not folders.own_folder(entry)
