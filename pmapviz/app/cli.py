"""Command-line interface: ``python -m pmapviz <command> [options]``.

Every command takes ``--devices N`` and ``--platform P`` (validated exactly as the app does)
and applies them before JAX starts. Bad input prints one line to stderr and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
from collections.abc import Callable

from pmapviz import valueparse
from pmapviz.app import (
    cliflags,
    cmd_bench,
    cmd_cluster,
    cmd_devices,
    cmd_doctor,
    cmd_dot,
    cmd_mesh,
    cmd_plan,
    cmd_trace,
    cmd_train,
)

COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str, Callable | None]] = {
    "devices": (cmd_devices.cmd_devices, "show the devices this process gets", None),
    "plan": (
        cmd_plan.cmd_plan,
        "validate shapes and axes for pmap, and give the result shapes",
        cmd_plan._plan_args,
    ),
    "hlo": (
        cmd_plan.cmd_hlo,
        "what XLA compiled: collectives, cost and memory, four variants",
        cmd_plan._hlo_args,
    ),
    "dot": (
        cmd_dot.cmd_dot,
        "the seed's pmap(vmap(dot)) example, checked against vmap",
        cmd_dot._dot_args,
    ),
    "train": (
        cmd_train.cmd_train,
        "data-parallel training with pmap, checked against one device",
        cmd_train._train_args,
    ),
    "cluster": (
        cmd_cluster.cmd_cluster,
        "a local jax.distributed cluster: local vs global devices; --join: a real one",
        cmd_cluster._cluster_args,
    ),
    "bench": (
        cmd_bench.cmd_bench,
        "time pmap, vmap, jit+NamedSharding, shard_map and numpy",
        cmd_bench._bench_args,
    ),
    "trace": (
        cmd_trace.cmd_trace,
        "one lane per device of a profiler trace from any machine",
        cmd_trace._trace_args,
    ),
    "doctor": (
        lambda args: cmd_doctor.cmd_doctor(args, run_here),
        "run every command and page on the devices here; a report",
        None,
    ),
    "mesh": (
        cmd_mesh.cmd_mesh,
        "a named mesh and PartitionSpecs: which device holds which block",
        cmd_mesh._mesh_args,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m pmapviz`` parser: one subcommand per entry of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(prog="python -m pmapviz", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (func, help_text, extra) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name not in ("bench", "cluster", "trace"):  # their own device flags, or none
            cliflags._device_args(p)
        if extra:
            extra(p)
        p.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs one command; its exit status (2, with one line on stderr, for bad input)."""
    args = build_parser().parse_args(argv)
    with contextlib.ExitStack() as scope:  # the command's device set (_start) ends with it
        cliflags._SCOPES.append(scope)
        try:
            return args.func(args)
        except valueparse.SettingError as err:
            print(f"pmapviz: {err}", file=sys.stderr)
            return 2
        finally:
            cliflags._SCOPES.pop()


def run_here(argv: list[str]) -> tuple[int, str, str]:
    """One command in this process (``doctor`` on a TPU, whose chip serves one process):
    ``(exit status, stdout, stderr)``, as a subprocess would give them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as stop:  # argparse's own refusals
            rc = stop.code if isinstance(stop.code, int) else 2
    return rc, out.getvalue(), err.getvalue()
