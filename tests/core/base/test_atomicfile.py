"""A file written whole or not at all: out of space, over the size limit, interrupted or
killed halfway, the previous file is intact, nothing half-written is left as the file, and
the error is one line saying which file, why, and what was kept."""

import errno
import os
import signal
import stat
import subprocess
import sys

import pytest

from pmapviz.core.base import atomicfile
from tests.conftest import ROOT

OLD = '{"old": true}\n'


class _Faulty:
    """``os`` as atomicfile sees it, with one function failing the way a disk fails."""

    def __init__(self, name: str, err: int, after: int = 0):
        self.name, self.err, self.after, self.calls = name, err, after, 0

    def __getattr__(self, attr):
        real = getattr(os, attr)
        if attr != self.name:
            return real

        def faulty(*args, **kwargs):
            self.calls += 1
            if self.calls > self.after:  # the first `after` calls go through: a file half written
                raise OSError(self.err, os.strerror(self.err))
            return real(*args, **kwargs)

        return faulty


def _siblings(folder) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_a_file_is_written_and_replaced_whole_with_no_temporary_file_left(tmp_path):
    target = tmp_path / "r.json"
    assert atomicfile.write_text(target, "first") == target
    assert target.read_text() == "first"
    atomicfile.write_bytes(target, b"x" * (3 * atomicfile.CHUNK + 5))  # several os.write calls
    assert target.read_bytes() == b"x" * (3 * atomicfile.CHUNK + 5)
    assert _siblings(tmp_path) == ["r.json"]


def test_the_previous_files_permissions_are_kept_and_a_new_file_gets_the_usual_ones(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(OLD)
    old.chmod(0o640)
    atomicfile.write_text(old, "new")
    assert stat.S_IMODE(old.stat().st_mode) == 0o640
    mask = os.umask(0o027)
    try:
        atomicfile.write_text(tmp_path / "new.json", "new")
    finally:
        os.umask(mask)
    assert stat.S_IMODE((tmp_path / "new.json").stat().st_mode) == 0o640  # 0666 less 027


@pytest.mark.parametrize(
    ("name", "err", "after"),
    [
        ("write", errno.ENOSPC, 1),  # the disk filled after the first MiB
        ("fsync", errno.EDQUOT, 0),  # the quota, found when the data goes to the disk
        ("replace", errno.EIO, 0),  # the rename itself failed
    ],
)
def test_a_disk_that_fails_halfway_leaves_the_previous_file_intact(
    tmp_path, monkeypatch, name, err, after
):
    target = tmp_path / "bench.json"
    target.write_text(OLD)
    faulty = _Faulty(name, err, after)
    monkeypatch.setattr(atomicfile, "os", faulty)
    with pytest.raises(atomicfile.NotWritten) as caught:
        atomicfile.write_bytes(target, b"y" * (2 * atomicfile.CHUNK + 1))
    assert faulty.calls > after  # the fault was reached, after any writes that went through
    assert target.read_text() == OLD
    assert _siblings(tmp_path) == ["bench.json"]  # the temporary file was removed
    said = str(caught.value)
    assert said.startswith(f"{target} was not written ({os.strerror(err)}): ")
    assert "the previous file is intact" in said and "\n" not in said
    assert caught.value.errno == err and isinstance(caught.value, OSError)


def test_out_of_space_with_no_previous_file_leaves_no_file_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setattr(atomicfile, "os", _Faulty("write", errno.ENOSPC))
    with pytest.raises(atomicfile.NotWritten) as caught:
        atomicfile.write_text(tmp_path / "new.json", "text")
    assert _siblings(tmp_path) == []
    assert str(caught.value) == (
        f"{tmp_path}/new.json was not written (No space left on device): there was no "
        "previous file; free some space there or name a file on another disk."
    )


def test_a_folder_that_went_away_is_one_line_with_its_fix(tmp_path):
    with pytest.raises(atomicfile.NotWritten) as caught:
        atomicfile.write_text(tmp_path / "gone" / "r.json", "text")
    assert str(caught.value) == (
        f"{tmp_path}/gone/r.json was not written (No such file or directory): there was no "
        "previous file; its folder is gone: create it again or name another file."
    )


def test_an_interrupt_halfway_removes_the_temporary_file_and_is_raised(tmp_path, monkeypatch):
    target = tmp_path / "r.json"
    target.write_text(OLD)

    class Interrupted(_Faulty):
        def __getattr__(self, attr):
            if attr == "write":
                raise KeyboardInterrupt
            return getattr(os, attr)

    monkeypatch.setattr(atomicfile, "os", Interrupted("write", 0))
    with pytest.raises(KeyboardInterrupt):
        atomicfile.write_text(target, "new")
    assert target.read_text() == OLD and _siblings(tmp_path) == ["r.json"]


def test_a_link_stays_a_link_and_a_device_is_written_not_replaced(tmp_path):
    real = tmp_path / "real.json"
    real.write_text(OLD)
    (tmp_path / "link.json").symlink_to(real)
    atomicfile.write_text(tmp_path / "link.json", "new")
    assert (tmp_path / "link.json").is_symlink() and real.read_text() == "new"
    atomicfile.write_text(os.devnull, "into the void")  # renaming over it would replace it
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


LIMITED = """
import resource, signal, sys
from pmapviz.core.base import atomicfile
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
try:
    atomicfile.write_bytes(sys.argv[1], b"z" * 1_000_000)
except atomicfile.NotWritten as err:
    print(err)
"""


def test_a_real_file_size_limit_the_kernel_enforces_leaves_the_previous_file(tmp_path):
    """The kernel's own refusal (RLIMIT_FSIZE: EFBIG past 64 KiB), as on a full disk."""
    target = tmp_path / "big.json"
    target.write_text(OLD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", LIMITED, str(target)], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0 and done.stderr == ""
    assert done.stdout.startswith(f"{target} was not written (File too large): the previous ")
    assert target.read_text() == OLD and _siblings(tmp_path) == ["big.json"]


KILLED = """
import os, sys, time
from pmapviz.core.base import atomicfile

class Slow:
    def __getattr__(self, name):
        return getattr(os, name)

    def write(self, fd, data):
        done = os.write(fd, data)
        print("halfway", flush=True)
        time.sleep(60)  # killed here
        return done

atomicfile.os = Slow()
atomicfile.write_bytes(sys.argv[1], b"n" * (8 * atomicfile.CHUNK))
"""


def test_a_process_killed_halfway_leaves_the_previous_file_and_a_hidden_temporary_one(tmp_path):
    """SIGKILL cannot be cleaned up after: the half-written data is in a hidden sibling
    named after the file (``.big.json.XXXX.tmp``), never in the file itself."""
    target = tmp_path / "big.json"
    target.write_text(OLD)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(target)], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout.readline() == "halfway\n"
        child.send_signal(signal.SIGKILL)
        assert child.wait(30) == -signal.SIGKILL
    finally:
        child.kill()
        child.stdout.close()
    assert target.read_text() == OLD
    (left,) = [p for p in tmp_path.iterdir() if p != target]
    assert left.name.startswith(".big.json.") and left.name.endswith(atomicfile.TEMP_SUFFIX)
    assert left.stat().st_size == atomicfile.CHUNK  # the half that was written, kept apart
