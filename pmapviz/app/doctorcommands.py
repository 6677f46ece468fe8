"""The doctor's checks that start the project's own entry points (see
:mod:`pmapviz.app.doctorreport`): every CLI command, each in a fresh process (or in this one,
where the devices serve one process at a time), what a second process is told beside this one,
and whether Streamlit is here to check the pages.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from pmapviz.core.devices import cliflags, devicefacts, deviceset, jaxstartup
from pmapviz.features.compiled import tracecapture

ROOT = Path(__file__).resolve().parents[2]  # pmapviz/app/doctorcommands.py -> the repository
Progress = Callable[[str], None] | None


def say(progress: Progress, text: str) -> None:
    """One line of progress, where there is a ``progress`` to tell."""
    if progress:
        progress(text)


def device_flags(settings: jaxstartup.Settings) -> list[str]:
    """The flags that give a subprocess or the app exactly these settings (what came from the
    environment comes again from the environment)."""
    flags = ["--devices", str(settings.devices)] if settings.devices_source == "flag" else []
    if settings.platform != "auto":
        flags += ["--platform", settings.platform]
    for flag, value in (
        ("--max-bytes", settings.max_bytes),
        ("--max-device-bytes", settings.max_device_bytes),
        ("--max-seconds", settings.max_seconds),
    ):
        if value:
            flags += [flag, str(value)]
    return flags


# the commands the doctor does not start, and why
NOT_RUN = {
    "doctor": "the doctor itself",
    "serve": "a server until stopped: the doctor runs every page it serves in this process",
}


def command_lines(settings: jaxstartup.Settings, trace_path: str | None) -> list[list[str]]:
    """Every CLI command but :data:`NOT_RUN`, small."""
    # the set this doctor checks (the machine's own), not a command's default
    on = ["--device-set", deviceset.current()] if deviceset.has_two() else []
    d = device_flags(settings) + on
    n = str(devicefacts.facts().local_count)
    cmds = [
        ["devices", *d, "--json"],
        [
            "plan",
            *d,
            "--fn",
            "batched_dot",
            "--shape",
            f"{n},1000,3",
            "--shape",
            f"{n},1000,3",
            "--json",
        ],
        ["hlo", *d, "--collective", "psum", "--json"],
        ["dot", *d, "--pairs", str(int(n) * 100_000), "--repeat", "3", "--json"],
        ["train", *d, "--steps", "20", "--batch", str(int(n) * 32), "--json"],
        [
            "bench",
            "--workload",
            "elementwise",
            "--size",
            str(int(n) * 4096),
            "--devices",
            n,
            "--platform",
            settings.platform,
            *on,
            "--repeat",
            "3",
            "--json",
            "-",
        ],
        ["cluster", "--processes", "2", "--local-devices", "1", "--json"],
        [
            "mesh",
            *d,
            "--mesh",
            n,
            "--axis-names",
            "data",
            "--shape",
            f"{n},16",
            "--spec",
            "P('data', None)",
            "--json",
        ],
        ["pod", *d, "--topology", "v5e:2x2", "--program", "psum", "--calibrate", "--json"],
        ["types", *d, "--json"],
        ["lesson", *d, "--out", "-", "--link", "/tour?step=4", "--link", "/explorer?fn=add"],
    ]
    if trace_path:
        cmds.append(["trace", trace_path, "--json"])
    return cmds


Here = Callable[[list[str]], tuple[int, str, str]]  # a command in this process (cli.run_here)


def in_subprocess(argv: list[str]) -> tuple[int, str, str]:
    """``python -m pmapviz ARGV`` in a fresh process: (exit status, stdout, stderr)."""
    r = subprocess.run(
        [sys.executable, "-m", "pmapviz", *argv],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=300,
    )
    return r.returncode, r.stdout, r.stderr


def commands_section(
    settings: jaxstartup.Settings, progress: Progress = None, here: Here | None = None
) -> list[dict]:
    """Every CLI command, each in a fresh process; where the devices serve one process at a
    time (a TPU chip, which this doctor holds), each in this process (``here``)."""
    run = here if here is not None and devicefacts.facts().exclusive else in_subprocess
    with tempfile.TemporaryDirectory(prefix="pmapviz-doctor-") as folder:
        trace_path = _write_trace(folder)
        rows = []
        for cmd in command_lines(settings, trace_path):
            say(progress, f"  python -m pmapviz {' '.join(cmd)}")
            t = time.perf_counter()
            rc, _, stderr = run(cmd)
            err = stderr.strip().splitlines()
            row = {
                "command": cmd[0],
                "rc": rc,
                "seconds": time.perf_counter() - t,
                "stderr": err[-1][:300] if err else "",
                "where": "this process" if run is here else "a fresh process",
                "traceback": "Traceback" in stderr,
            }
            if rc == cliflags.EXIT_NOT_HERE and err:  # this machine's rule, not a failure
                row.update(rc=0, skipped=err[-1].removeprefix("pmapviz: ")[:300])
            rows.append(row)
    return rows


def beside_section(settings: jaxstartup.Settings) -> dict:
    """Where a chip serves one process at a time: what a second process is told while this
    one holds it (one line, what works beside it, no harmful advice; whether it named this
    process), and that the CPU devices still work beside it. Elsewhere: not needed."""
    if not devicefacts.facts().exclusive:
        return {
            "ok": True,
            "skipped": f"{devicefacts.facts().name} devices can be shared by several processes",
        }
    rc, _, stderr = in_subprocess(["devices", *device_flags(settings)])
    lines = stderr.strip().splitlines()
    said = lines[-1] if lines else ""
    cpu_rc, _, cpu_err = in_subprocess(["devices", "--platform", "cpu", "--json"])
    ok = (
        rc == 2
        and "--platform cpu" in said
        and "sudo" not in said
        and "auto" not in said
        and cpu_rc == 0
    )
    return {
        "ok": ok,
        "names_this_process": f"process {os.getpid()}" in said,
        "rc": rc,
        "said": said[:400],
        "cpu_rc": cpu_rc,
        "cpu_stderr": cpu_err.strip().splitlines()[-1][:300] if cpu_rc else "",
    }


def _write_trace(folder: str) -> str | None:
    """A real trace of a jitted call on this machine's devices, for the trace command."""
    import jax
    import jax.numpy as jnp

    x = jax.device_put(jnp.ones((1024,)), devicefacts.local_devices_for_work()[0])
    f = jax.jit(lambda v: jnp.sin(v) * 2)
    jax.block_until_ready(f(x))
    try:
        with jax.profiler.trace(folder, create_perfetto_trace=True):
            for _ in range(2):
                jax.block_until_ready(f(x))
    except (RuntimeError, OSError) as err:  # busy, or the disk refused the trace
        if tracecapture.disk_reason(err) is not None:
            tracecapture.release_profiler()  # else every later trace is refused
        return None
    return folder


NO_STREAMLIT = (
    "Streamlit is not installed here: pages not checked (pip install -r requirements.txt)"
)
PageCheck = Callable[[jaxstartup.Settings, Progress], list[dict]]
