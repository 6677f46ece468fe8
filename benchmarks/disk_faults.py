"""Disk faults injected for real (issue 52): full and read-only filesystems under the CLI's
writers, JAX's compilation cache and the profiler; a file size limit; a writer killed halfway.

    sudo .venv/bin/python benchmarks/disk_faults.py [--devices 2] [--json FILE]

One row per fault: how it was injected, what the user saw (the lines pmapviz said), files left
partial (a report that is neither the previous one nor whole; a cache entry no JAX can read; a
trace folder left behind), processes left in the command's group, tracebacks. Every row should
read: one clear line (or none where nothing failed), 0 partial, 0 left, 0 tracebacks.

The filesystems are tmpfs mounts of 64 KiB to 70 MiB (``mount -t tmpfs -o size=...``), which
needs root (CAP_SYS_ADMIN). Without it those rows are skipped and the rest run: the file size
limit (``RLIMIT_FSIZE``: the kernel refuses writes past it with EFBIG, as a full disk refuses
them with ENOSPC), corrupt cache entries and the kill.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

PY = sys.executable
OLD = '{"old": true}\n'
QUICK_BENCH = ["bench", "--devices", "1", "--size", "1024", "--repeat", "1", "--impls", "numpy"]
STRIP = ("JAX_", "XLA_", "PMAPVIZ_", "SLURM_", "OMPI_", "TPU_", "KUBERNETES_")


@dataclass
class Row:
    fault: str
    injected: str
    said: str  # the pmapviz lines on stderr (or the note a command printed), " | "-joined
    rc: int | None = None
    partial: int = 0
    left_behind: int = 0
    tracebacks: int = 0
    notes: str = ""
    ok: bool = False


@dataclass
class Ran:
    rc: int
    out: str
    err: str
    left: int  # processes of the command's group still alive when it returned

    def said(self) -> str:
        lines = [ln for ln in (self.err + self.out).splitlines() if ln.startswith("pmapviz: ")]
        return " | ".join(lines) or "(nothing said)"

    def tracebacks(self) -> int:
        return (self.err + self.out).count("Traceback")


def run(argv: list[str], env: dict | None = None, preexec: Callable | None = None) -> Ran:
    """``argv`` in a session of its own; after it ends, the processes left in that group are
    counted (then ended, by the group id this script made)."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(STRIP)}
    full = {**base, "PYTHONPATH": str(ROOT), **(env or {})}
    child = subprocess.Popen(
        argv,
        cwd=ROOT,
        env=full,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=preexec,
    )
    out, err = child.communicate(timeout=300)
    left = _group_count(child.pid)
    if left:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(child.pid, signal.SIGKILL)
    return Ran(child.returncode, out, err, left)


def _group_count(pgid: int) -> int:
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        with contextlib.suppress(OSError):
            if os.getpgid(int(pid)) == pgid:
                count += 1
    return count


def cli(*args: str, **kw) -> Ran:
    return run([PY, "-m", "pmapviz", *args], **kw)


# ------------------------------------------------------------------ filesystems
class Mounts:
    """tmpfs filesystems made for the faults, every one unmounted at the end."""

    def __init__(self, base: Path):
        self.base, self.made, self.ok = base, [], None

    def can(self) -> bool:
        if self.ok is None:
            try:
                self.ok = self.mount("64k") is not None
            except (OSError, subprocess.CalledProcessError):
                self.ok = False
        return self.ok

    def mount(self, size: str) -> Path:
        where = Path(tempfile.mkdtemp(dir=self.base, prefix=f"fs-{size}-"))
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(where)],
            check=True,
            capture_output=True,
        )
        self.made.append(where)
        return where

    def read_only(self, where: Path, ro: bool = True) -> None:
        mode = "ro" if ro else "rw"
        subprocess.run(["mount", "-o", f"remount,{mode}", str(where)], check=True)

    def close(self) -> None:
        for where in reversed(self.made):
            subprocess.run(["umount", str(where)], capture_output=True)
            with contextlib.suppress(OSError):
                where.rmdir()


def fill(where: Path, leave: int = 0) -> None:
    """Fill the filesystem at ``where`` until ``leave`` bytes are free (0: full)."""
    with open(where / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while (free := os.statvfs(where).f_bavail * os.statvfs(where).f_frsize) > leave:
            f.write(b"\0" * min(65536, max(1, free - leave)))


def _others(folder: Path, expected: set[str]) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name not in expected)


def _report_partial(target: Path, folder: Path, expected: set[str]) -> int:
    """The report neither the previous file nor whole JSON, plus any other file beside it."""
    partial = len(_others(folder, expected))
    if target.exists() and target.read_text() != OLD:
        try:
            json.loads(target.read_text())
        except ValueError:
            partial += 1
    return partial


# ------------------------------------------------------------------ the CLI's reports
def bench_full_disk(m: Mounts) -> Row:
    where = m.mount("64k")
    target = where / "bench.json"
    target.write_text(OLD)
    fill(where)
    ran = cli(*QUICK_BENCH, "--compile-cache", "off", "--json", str(target))
    return _report_row("bench --json on a full disk", "tmpfs 64 KiB, filled", ran, target)


def bench_file_size_limit(tmp: Path) -> Row:
    target = tmp / "limit" / "bench.json"
    target.parent.mkdir()
    target.write_text(OLD)

    def limit():
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (512, 512))

    ran = cli(*QUICK_BENCH, "--compile-cache", "off", "--json", str(target), preexec=limit)
    return _report_row("bench --json past a size limit", "RLIMIT_FSIZE 512 B", ran, target)


def cluster_report_full_disk(m: Mounts) -> Row:
    where = m.mount("64k")
    target = where / "cluster-report.json"
    target.write_text(OLD)
    fill(where)
    port = _free_port()
    env = {
        "SLURM_JOB_ID": str(4096 * 7 + (port - 61440)),  # JAX: port = id % 4096 + 61440
        "SLURM_STEP_NODELIST": "localhost",
        "SLURM_NTASKS": "1",
        "SLURM_PROCID": "0",
        "SLURM_LOCALID": "0",
        "JAX_COORDINATOR_BIND_ADDRESS": f"127.0.0.1:{port}",
    }
    argv = ["cluster", "--join", "--local-devices", "1", "--timeout", "60", "--report"]
    ran = cli(*argv, str(target), env=env)
    return _report_row("cluster --join --report, full disk", "tmpfs 64 KiB, filled", ran, target)


def _report_row(fault: str, injected: str, ran: Ran, target: Path) -> Row:
    partial = _report_partial(target, target.parent, {target.name, "filler"})
    row = Row(fault, injected, ran.said(), ran.rc, partial, ran.left, ran.tracebacks())
    row.notes = "previous file intact" if target.read_text() == OLD else "previous file CHANGED"
    row.ok = ran.rc == 1 and row.said.count(" | ") == 0 and _clean(row) and "intact" in row.said
    return row


def _free_port() -> int:
    for port in range(62000, 65000):
        with socket.socket() as s, contextlib.suppress(OSError):
            s.bind(("127.0.0.1", port))
            return port
    raise RuntimeError("no free port")


KILLED = """
import os, sys, time
from pmapviz.core.base import atomicfile
class Slow:
    def __getattr__(self, name):
        return getattr(os, name)
    def write(self, fd, data):
        done = os.write(fd, data)
        print("halfway", flush=True)
        time.sleep(60)
        return done
atomicfile.os = Slow()
atomicfile.write_bytes(sys.argv[1], b"n" * (64 * atomicfile.CHUNK))
"""


def killed_halfway(tmp: Path) -> Row:
    folder = tmp / "killed"
    folder.mkdir()
    target = folder / "big.json"
    target.write_text(OLD)
    base = {k: v for k, v in os.environ.items() if not k.startswith(STRIP)}
    child = subprocess.Popen(
        [PY, "-c", KILLED, str(target)],
        env={**base, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout.readline() == "halfway\n"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(30)
    child.stdout.close()
    hidden = [n for n in _others(folder, {"big.json"}) if n.startswith(".big.json.")]
    partial = len(_others(folder, {"big.json", *hidden})) + (target.read_text() != OLD)
    row = Row("writer SIGKILLed halfway (64 MiB)", "SIGKILL after the first MiB", "(killed)")
    row.rc, row.partial, row.left_behind = child.returncode, partial, _group_count(child.pid)
    row.notes = f"previous file intact; hidden temp left: {', '.join(hidden) or 'none'}"
    row.ok = partial == 0 and row.left_behind == 0
    return row


def _clean(row: Row) -> bool:
    return row.partial == 0 and row.left_behind == 0 and row.tracebacks == 0


# ------------------------------------------------------------------ the compile cache
def cache_full_at_start(m: Mounts) -> list[Row]:
    where = m.mount("64k")
    fill(where)
    return _cache_start_rows("cache on a full disk at start", "tmpfs 64 KiB, filled", where)


def cache_read_only_at_start(m: Mounts) -> list[Row]:
    where = m.mount("1m")
    (where / "jax").mkdir()
    m.read_only(where)
    return _cache_start_rows("cache folder read-only at start", "tmpfs remounted ro", where)


def _cache_start_rows(fault: str, injected: str, where: Path) -> list[Row]:
    """``devices`` says the cache line; a command that compiles works (and what it says)."""
    rows = []
    folder = str(where / "jax")
    for cmd in (["devices"], ["hlo", "--collective", "psum"]):
        ran = cli(*cmd, "--devices", "2", "--compile-cache", folder)
        said = ran.said()
        if cmd == ["devices"]:  # its notes are printed as its own lines
            said = " | ".join(ln for ln in ran.out.splitlines() if "compilation cache" in ln)
        row = Row(f"{fault}: {cmd[0]}", injected, said or "(nothing said)", ran.rc)
        row.left_behind, row.tracebacks = ran.left, ran.tracebacks()
        row.partial = _entries_damaged(Path(folder))
        row.ok = ran.rc == 0 and _clean(row) and (cmd[0] != "devices" or "is off" in said)
        rows.append(row)
    return rows


AFTER_START = """
import os, sys
from pmapviz.core.devices import jaxstartup
notes = jaxstartup.apply(jaxstartup.parse_settings(sys.argv[1:], {}))
print("started", notes, flush=True)
sys.stdin.readline()  # the fault is injected now
import numpy as np
from pmapviz.features.collectives import collectiveruns
ok = True
for key in ("psum", "all_gather", "ppermute", "all_to_all", "pmean"):
    out = collectiveruns.run(key, 2, 8)
    ok &= all(np.allclose(a, e) for a, e in zip(out.after, out.expected, strict=True))
print("correct" if ok else "WRONG", flush=True)
"""


def cache_fault_after_start(m: Mounts, how: str) -> Row:
    """The cache is on (the start-up check passed); then the disk fills or turns read-only,
    and five collectives of the Collectives page compile; a second process reads the
    cache."""
    where = m.mount("70m")
    folder = where / "jax"
    argv = [PY, "-c", AFTER_START, "--devices", "2", "--compile-cache", str(folder)]
    base = {k: v for k, v in os.environ.items() if not k.startswith(STRIP)}
    child = subprocess.Popen(
        argv,
        cwd=ROOT,
        env={**base, "PYTHONPATH": str(ROOT)},
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert child.stdout.readline().startswith("started ()")
    if how == "full":
        fill(where, leave=12 * 1024)
    else:
        m.read_only(where)
    out, err = child.communicate("go\n", timeout=300)
    ran = Ran(child.returncode, out, err, _group_count(child.pid))
    injected = "tmpfs 70 MiB, filled to 12 KiB" if how == "full" else "tmpfs remounted ro"
    row = Row(f"cache {how} after start (5 compiles)", injected, ran.said(), ran.rc)
    row.left_behind, row.tracebacks = ran.left, ran.tracebacks()
    row.partial = _entries_damaged(folder)
    if how == "full":  # room again, writable again: the next process reads what was kept
        (where / "filler").unlink()
    else:
        m.read_only(where, False)
    again = run([PY, "-c", AFTER_START.replace("sys.stdin.readline()", ""), *argv[3:]])
    row.notes = (
        f"results {'correct' if 'correct' in out else 'WRONG'}; with room again the next "
        f"process: rc {again.rc}, said {again.said()}, results "
        f"{'correct' if 'correct' in again.out else 'WRONG'}"
    )
    row.ok = (
        ran.rc == 0
        and "correct" in out
        and row.said.count(" | ") == 0
        and row.said != "(nothing said)"
        and _clean(row)
        and again.rc == 0
        and "correct" in again.out
        and not again.tracebacks()
    )
    return row


def cache_corrupt(tmp: Path) -> Row:
    folder = tmp / "corrupt-cache"
    first = cli("hlo", "--collective", "psum", "--devices", "2", "--compile-cache", str(folder))
    entries = sorted(folder.iterdir())
    for k, entry in enumerate(entries):
        data = entry.read_bytes()
        entry.write_bytes(os.urandom(len(data)) if k % 2 else data[: len(data) // 3])
    ran = cli("hlo", "--collective", "psum", "--devices", "2", "--compile-cache", str(folder))
    row = Row(
        "cache entries corrupt",
        f"{len(entries)} entries: garbage or cut to 1/3",
        ran.said(),
        ran.rc,
        _entries_damaged(folder),
        ran.left,
        ran.tracebacks(),
    )
    same = _without_times(ran.out) == _without_times(first.out)
    row.notes = f"output as before (compile times aside): {same}"
    row.ok = ran.rc == 0 and same and _clean(row) and row.said.count(" | ") == 0
    return row


def _without_times(out: str) -> list[str]:
    return [ln for ln in out.splitlines() if not ln.startswith("compiled in ")]


def _entries_damaged(folder: Path) -> int:
    """Cache entries no JAX could read (what the next process would trip on)."""
    from pmapviz.core.devices import compilecache

    try:
        from jax._src.compilation_cache import decompress_executable
    except ImportError:
        return 0
    if not folder.is_dir():
        return 0
    return sum(
        compilecache._damaged(p.read_bytes(), decompress_executable)
        for p in folder.iterdir()
        if p.name.endswith("-cache")
    )


# ------------------------------------------------------------------ the profiler
TRACE = """
import os, sys
from pmapviz.core.devices import jaxstartup
jaxstartup.apply(jaxstartup.parse_settings(["--devices", "2", "--compile-cache", "off"], {}))
from pmapviz.features.compiled import tracecapture
for attempt in ("full", "room"):
    try:
        tl, _ = tracecapture.collective_timeline("psum", 2, 256)
        print(f"{attempt}: traced, {len(tl.lanes)} lanes", flush=True)
    except tracecapture.ProfilerBusy as err:
        print(f"pmapviz: {err}", file=sys.stderr, flush=True)
    os.path.exists(sys.argv[1]) and os.remove(sys.argv[1])  # room again
"""


def trace_full_tmpdir(m: Mounts) -> Row:
    """8 KiB left: Python's tempfile still takes the folder (on a disk that takes nothing it
    silently moves to /tmp, and the trace works), the profiler's files do not fit."""
    where = m.mount("64k")
    fill(where, leave=8 * 1024)
    ran = run([PY, "-c", TRACE, str(where / "filler")], env={"TMPDIR": str(where)})
    leftovers = _others(where, {"filler"})
    row = Row("profiler trace, TMPDIR full", "tmpfs 64 KiB, 8 KiB left", ran.said(), ran.rc)
    row.partial, row.left_behind, row.tracebacks = len(leftovers), ran.left, ran.tracebacks()
    row.notes = ran.out.strip().replace("\n", "; ")
    row.ok = (
        ran.rc == 0 and "room: traced, 2 lanes" in ran.out and _clean(row) and " | " not in row.said
    )
    return row


# ------------------------------------------------------------------ the table
def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", type=Path, default=None, help="write the rows here too")
    args = ap.parse_args()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="pmapviz-disk-faults-") as tmp:
        mounts = Mounts(Path(tmp))
        try:
            rows += _run_all(Path(tmp), mounts)
        finally:
            mounts.close()
    _print(rows)
    if args.json:
        from pmapviz.core.base import atomicfile

        atomicfile.write_text(args.json, json.dumps([asdict(r) for r in rows], indent=2))
    return 0 if all(r.ok for r in rows) else 1


def _run_all(tmp: Path, mounts: Mounts) -> Iterator[Row]:
    t0 = time.perf_counter()
    yield bench_file_size_limit(tmp)
    yield killed_halfway(tmp)
    yield cache_corrupt(tmp)
    if not mounts.can():
        print("mount -t tmpfs is not allowed here (root needed): filesystem rows skipped")
        return
    yield bench_full_disk(mounts)
    yield cluster_report_full_disk(mounts)
    yield from cache_full_at_start(mounts)
    yield from cache_read_only_at_start(mounts)
    yield cache_fault_after_start(mounts, "full")
    yield cache_fault_after_start(mounts, "read-only")
    yield trace_full_tmpdir(mounts)
    print(f"({time.perf_counter() - t0:.0f} s)", file=sys.stderr)


def _print(rows: list[Row]) -> None:
    print("| fault | injected | what the user saw | rc | partial | left | tracebacks | ok |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r.fault} | {r.injected} | {r.said} | {r.rc} | {r.partial} | {r.left_behind} "
            f"| {r.tracebacks} | {'yes' if r.ok else 'NO'} |"
        )
    for r in rows:
        if r.notes:
            print(f"- {r.fault}: {r.notes}")


if __name__ == "__main__":
    sys.exit(main())
