"""JAX's persistent compilation cache: its folder as typed, on by default, off on request, and a
second process compiling the same program reads it from disk."""

import errno
import os
import shutil
import subprocess
import sys
import zlib

import pytest

from pmapviz.core.base.valueparse import SettingError
from pmapviz.core.devices import compilecache, jaxstartup
from tests.conftest import ROOT


def test_the_folder_is_per_user_on_by_default_and_off_on_request(tmp_path):
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert compilecache.parse(None, "--compile-cache", env) == str(tmp_path / "pmapviz" / "jax")
    assert compilecache.parse("", "--compile-cache", {}).endswith(".cache/pmapviz/jax")
    for off in ("off", "OFF", "none", "0"):
        assert compilecache.parse(off, "--compile-cache", env) is None
    assert compilecache.parse(str(tmp_path / "new"), "--compile-cache", env) == str(
        tmp_path / "new"
    )


def test_a_file_or_a_control_character_is_refused_in_words(tmp_path):
    a_file = tmp_path / "f.txt"
    a_file.write_text("x")
    with pytest.raises(SettingError, match="is a file: name a folder"):
        compilecache.parse(str(a_file), "--compile-cache")
    with pytest.raises(SettingError, match="is not a path"):
        compilecache.parse("a\x00b", "PMAPVIZ_COMPILE_CACHE=")


def test_the_setting_comes_from_the_flag_then_the_environment(tmp_path):
    env = {compilecache.ENV: "off"}
    assert jaxstartup.parse_settings([], env).compile_cache is None
    flag = jaxstartup.parse_settings(["--compile-cache", str(tmp_path)], env)
    assert flag.compile_cache == str(tmp_path)
    with pytest.raises(SettingError, match="--compile-cache"):
        jaxstartup.parse_settings(["--compile-cache"], {})


def test_an_unmakeable_folder_leaves_the_cache_off_with_a_note(tmp_path, own_state):
    a_file = tmp_path / "f"
    a_file.write_text("x")
    note = compilecache.enable(str(a_file / "sub"))
    assert note and "cannot be made" in note


PROGRAM = """
import sys, time
from pmapviz.core.devices import jaxstartup
jaxstartup.apply(jaxstartup.parse_settings(sys.argv[1:], {}))
import jax, jax.numpy as jnp
from pmapviz.core.devices import compilecache
f = jax.pmap(lambda x: jax.lax.psum(jnp.tanh(x) @ x.T, 'i'), axis_name='i')
f.lower(jax.ShapeDtypeStruct((2, 32, 32), jnp.float32)).compile()
print(compilecache.folder_in_use())
"""


def test_a_second_process_reads_the_program_the_first_compiled(tmp_path):
    folder = tmp_path / "cache"
    argv = [sys.executable, "-c", PROGRAM, "--devices", "2", "--compile-cache", str(folder)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0, first.stderr
    assert first.stdout.strip() == str(folder)
    kept = sorted(p.name for p in folder.iterdir())
    assert kept, "nothing was written to the cache"
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    assert sorted(p.name for p in folder.iterdir()) == kept  # read, not compiled and written
    off = [*argv[:-2], "--compile-cache", "off"]
    third = subprocess.run(off, capture_output=True, text=True, env=env, timeout=120)
    assert third.stdout.strip() == "None"


FRESH = """
import os, sys, time
from pmapviz.core.devices import jaxstartup
jaxstartup.apply(jaxstartup.parse_settings(sys.argv[1:], {}))
import jax, jax.numpy as jnp
from pmapviz.core.devices import compilecache

def f(x):
    return x * 2 + 1

spec = jax.ShapeDtypeStruct((2, 4096), jnp.float32)
jax.pmap(f).lower(spec).compile()  # kept: the cache's first entry
kept = len(os.listdir(sys.argv[-1]))
times = []
for _ in range(3):
    with compilecache.kept_out():
        t = time.perf_counter()
        jax.pmap(compilecache.renamed(f)).lower(spec).compile()
        times.append(time.perf_counter() - t)
print(kept, len(os.listdir(sys.argv[-1])), min(times))
"""


def test_a_renamed_program_is_compiled_afresh_and_not_kept(tmp_path):
    """The Timing lab's programs: each a compile (not a read of the entry the same program
    left), and none kept in the cache."""
    argv = [sys.executable, "-c", FRESH, "--devices", "2", "--compile-cache", str(tmp_path)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    kept, after, fastest = done.stdout.split()
    assert int(kept) >= 1 and after == kept  # the renamed ones were not written
    names = {compilecache.renamed(len).__name__ for _ in range(3)}
    assert len(names) == 3 and all(n.startswith("len_fresh") for n in names)


# ---------------------------------------------------------------- issue 52: the disk
@pytest.fixture()
def own_state(monkeypatch):
    """enable() here must not change what the test process's cache (conftest) recorded."""
    monkeypatch.setattr(compilecache, "_STATE", dict(compilecache._STATE))


class _Disk:
    """``os`` as compilecache sees it, one function failing as a disk fails."""

    def __init__(self, name: str, err: int):
        self.name, self.err = name, err

    def __getattr__(self, attr):
        if attr == self.name:

            def refuse(*a, **k):
                raise OSError(self.err, os.strerror(self.err))

            return refuse
        return getattr(os, attr)


FIX = "; give another folder with --compile-cache DIR (or PMAPVIZ_COMPILE_CACHE=DIR), or "


@pytest.mark.parametrize(
    ("name", "err", "said"),
    [
        ("write", errno.EACCES, "is not writable (Permission denied)"),
        ("write", errno.EROFS, "is not writable (Read-only file system)"),
        ("write", errno.ENOSPC, "is on a full disk (No space left on device)"),
        ("write", errno.EDQUOT, "is on a full disk (Disk quota exceeded)"),
    ],
)
def test_a_folder_that_cannot_take_a_file_keeps_the_cache_off_with_one_line(
    tmp_path, monkeypatch, own_state, name, err, said
):
    before = compilecache.folder_in_use()
    monkeypatch.setattr(compilecache, "os", _Disk(name, err))
    note = compilecache.enable(str(tmp_path))
    assert note == f"JAX's compilation cache is off: {tmp_path} {said}{FIX}--compile-cache off."
    assert compilecache.folder_in_use() == before  # JAX was not pointed at it
    assert compilecache.note() == note and compilecache.summary() == note
    assert list(tmp_path.iterdir()) == []  # the probe left nothing behind


def test_a_disk_with_little_room_counts_as_full(tmp_path, monkeypatch, own_state):
    free = 10 * 2**20
    usage = shutil.disk_usage(tmp_path)._replace(free=free)
    monkeypatch.setattr(compilecache.shutil, "disk_usage", lambda path: usage)
    assert compilecache.folder_problem(str(tmp_path)) == (
        f"{tmp_path} is on a full disk (10.0 MiB free; it needs at least 64 MiB)"
    )
    assert compilecache.folder_problem(str(tmp_path), min_free=free) is None


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_a_read_only_folder_keeps_the_cache_off(tmp_path, own_state):
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        note = compilecache.enable(str(folder))
    finally:
        folder.chmod(0o755)
    assert note.startswith(f"JAX's compilation cache is off: {folder} is not writable (Permission")


def test_the_doctors_line_says_on_where_and_how_many_or_off(tmp_path, monkeypatch, own_state):
    (tmp_path / "jit_f-abc-cache").write_bytes(b"x")
    (tmp_path / ".pmapviz-probe-x.tmp").write_bytes(b"")  # not a program
    compilecache._STATE.update(folder=str(tmp_path), note=None, later=None)
    assert compilecache.summary() == (
        f"JAX's compilation cache is on: {tmp_path} (1 program(s) kept)."
    )
    compilecache._STATE.update(folder=None)
    assert compilecache.note() is None
    assert compilecache.summary().startswith("JAX's compilation cache is off (--compile-cache off")


FILLS = """
import errno, os, pathlib, sys
from pmapviz.core.devices import jaxstartup
print(jaxstartup.apply(jaxstartup.parse_settings(sys.argv[2:], {})))
import jax, jax.numpy as jnp
from pmapviz.core.devices import compilecache

code, folder, real, tries = int(sys.argv[1]), sys.argv[-1], pathlib.Path.write_bytes, []

def write_bytes(self, data):  # after the cache's first entry: a full disk, or read-only
    if str(self).startswith(folder):
        tries.append(self.name)
        if len(tries) > 1:
            real(self, data[: len(data) // 2])  # cut short, as a full disk leaves it
            raise OSError(code, os.strerror(code))
    return real(self, data)

pathlib.Path.write_bytes = write_bytes
for k in range(4):
    f = jax.pmap(lambda x, k=k: jax.lax.psum(x * k, "i"), axis_name="i")
    f.lower(jax.ShapeDtypeStruct((2, 8 + k), jnp.float32)).compile()
    jax.jit(lambda x, k=k: x + k).lower(jax.ShapeDtypeStruct((3 + k,), jnp.float32)).compile()
print(len(tries), len(os.listdir(folder)))
print(compilecache.note())
"""


@pytest.mark.parametrize(
    ("code", "fix"),
    [(errno.ENOSPC, "free space there"), (errno.EROFS, "make {folder} writable")],
)
def test_a_disk_that_fails_after_start_is_said_once_and_no_more_is_written(tmp_path, code, fix):
    """JAX warns in two lines for every program it cannot write, and keeps the entry it
    cut short for every later process to fail on; here: one line on stderr, the cut entry
    removed, and no write tried after it."""
    folder = tmp_path / "cache"
    argv = [sys.executable, "-c", FILLS, str(code), "--devices", "2", "--compile-cache"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [*argv, str(folder)], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    line = (
        f"JAX's compilation cache stopped keeping programs: writing to {folder} failed "
        f"({os.strerror(code)}) (the entry it cut short was removed); programs are compiled "
        f"afresh; {fix.format(folder=folder)}, or start with --compile-cache DIR or "
        "--compile-cache off."
    )
    assert done.stderr == f"pmapviz: {line}\n"
    notes, counts, note = done.stdout.splitlines()
    assert notes == "()" and counts == "2 1" and note == line  # 8 programs, 2 writes tried


PAGE = """
import sys
from pmapviz.core.devices import jaxstartup
jaxstartup.apply(jaxstartup.parse_settings(sys.argv[1:], {}))
import numpy as np
from pmapviz.core.devices import compilecache
from pmapviz.features.collectives import collectiveruns
for key in ("psum", "all_gather"):
    out = collectiveruns.run(key, 2, 8)  # the Collectives page's compile and run
    assert all(np.allclose(a, e) for a, e in zip(out.after, out.expected, strict=True)), key
print("correct", compilecache.note())
"""


def test_damaged_entries_are_removed_and_compiled_afresh_with_correct_results(tmp_path):
    """Every entry overwritten with garbage (or cut short, as a full disk leaves them): a
    page's compile through pmapviz's own path still gives the right values; the damage is
    said once in one line (JAX warned per program, and kept the entries to fail on again),
    never a traceback; the damaged entries are gone, and the next process reads the cache."""
    folder = tmp_path / "cache"
    argv = [sys.executable, "-c", PAGE, "--devices", "2", "--compile-cache", str(folder)]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    first = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert first.returncode == 0 and first.stdout == "correct None\n", first.stderr
    entries = sorted(folder.iterdir())
    assert len(entries) >= 2
    for k, entry in enumerate(entries):
        size = entry.stat().st_size
        entry.write_bytes(os.urandom(size) if k % 2 else entry.read_bytes()[: size // 3])
    second = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert second.returncode == 0, second.stderr
    line = (
        f"JAX's compilation cache had {len(entries)} damaged entries in {folder}: removed, "
        "and compiled afresh; the cache works on."
    )
    assert second.stdout == f"correct {line}\n"
    assert second.stderr == f"pmapviz: {line}\n"  # no Traceback, no UserWarning
    assert len(list(folder.iterdir())) == len(entries)  # written again, whole
    third = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert (third.returncode, third.stdout, third.stderr) == (0, "correct None\n", "")


def test_only_entries_no_jax_could_read_are_removed(tmp_path):
    program = zlib.compress(b"an executable" * 100)
    keep = {
        "jit_a-1-cache": program,  # this JAX's
        "jit_b-2-cache": compilecache.ZSTD_MAGIC + b"a frame",  # a zstd JAX's, beside it
        "notes.txt": b"not an entry",
    }
    damaged = {
        "jit_c-3-cache": program[: len(program) // 2],  # cut short by a full disk
        "jit_d-4-cache": b"",  # created, then the disk was full
        "jit_e-5-cache": b"\x00garbage" * 50,
    }
    for name, data in {**keep, **damaged}.items():
        (tmp_path / name).write_bytes(data)
    assert compilecache.remove_damaged(str(tmp_path)) == len(damaged)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(keep)
    assert compilecache.remove_damaged(str(tmp_path / "gone")) == 0
