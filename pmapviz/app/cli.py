"""Command-line interface: ``python -m pmapviz <command> [options]``.

Every command takes ``--devices N`` and ``--platform P`` (validated exactly as the app does)
and applies them before JAX starts. Bad input prints one line to stderr and exits 2.

The CLI loads only the command it runs (:func:`command_module`, by its name in
:data:`COMMANDS`): ``--help`` imports no JAX, and ``plan`` none of ``bench``'s modules. The
commands never import this module (tests/app/test_cli.py checks), so the table hides no cycle.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import io
import logging
import os
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass
from types import ModuleType
from typing import NoReturn

from pmapviz.core.base import stopping, valueparse
from pmapviz.core.devices import cliflags


@dataclass(frozen=True)
class Command:
    """One command: the module under ``pmapviz`` that runs it (its feature's ``cmd_*``), its
    function there, the function that adds its flags (None: the shared device flags alone) and
    what it does."""

    module: str
    run: str
    flags: str | None
    help: str


COMMANDS: dict[str, Command] = {
    "devices": Command(
        "app.cmd_devices", "cmd_devices", None, "show the devices this process gets"
    ),
    "plan": Command(
        "features.smap.cmd_smap",
        "cmd_plan",
        "plan_args",
        "validate shapes and axes for pmap, and give the result shapes; --smap: and as "
        "JAX runs pmap, and jax.smap beside it",
    ),
    "hlo": Command(
        "features.compiled.cmd_hlo",
        "cmd_hlo",
        "_hlo_args",
        "what XLA compiled: collectives, cost and memory, four variants",
    ),
    "dot": Command(
        "features.live.cmd_dot",
        "cmd_dot",
        "_dot_args",
        "the seed's pmap(vmap(dot)) example, checked against vmap",
    ),
    "train": Command(
        "features.training.cmd_train",
        "cmd_train",
        "_train_args",
        "data-parallel training with pmap, checked against one device",
    ),
    "cluster": Command(
        "features.cluster.cmd_cluster",
        "cmd_cluster",
        "_cluster_args",
        "a local jax.distributed cluster: local vs global devices; --join: a real one",
    ),
    "bench": Command(
        "features.timing.cmd_bench",
        "cmd_bench",
        "_bench_args",
        "time pmap, vmap, jit+NamedSharding, shard_map and numpy",
    ),
    "trace": Command(
        "features.compiled.cmd_trace",
        "cmd_trace",
        "_trace_args",
        "one lane per device of a profiler trace from any machine",
    ),
    "doctor": Command(
        "app.cmd_doctor",
        "cmd_doctor",
        None,
        "run every command and page on the devices here; a report",
    ),
    "mesh": Command(
        "features.meshes.cmd_mesh",
        "cmd_mesh",
        "_mesh_args",
        "a named mesh and PartitionSpecs: which device holds which block",
    ),
    "serve": Command(
        "app.cmd_serve",
        "cmd_serve",
        "_serve_args",
        "serve the dashboard from this installed package (streamlit run app.py's twin)",
    ),
    "pod": Command(
        "features.pods.cmd_pod",
        "cmd_pod",
        "_pod_args",
        "compile for a TPU slice you don't have: memory, cost, collectives; --sweep",
    ),
    "types": Command(
        "features.types.cmd_types",
        "cmd_types",
        "_types_args",
        "every equation's type in Auto, Explicit and Manual modes, and its communication",
    ),
    "lesson": Command(
        "app.cmd_lesson",
        "cmd_lesson",
        "_lesson_args",
        "a workshop's lesson file from its path's links (--out), or read one back",
    ),
}
OWN_DEVICE_FLAGS = ("bench", "cluster", "trace", "serve")  # their own device flags, or none


def command_module(name: str) -> ModuleType:
    """The module that runs command ``name``, loaded when that command runs: a command loads
    its own modules and no other's (``pmapviz --help`` loads none, and no JAX)."""
    return importlib.import_module(f"pmapviz.{COMMANDS[name].module}")


def _prog() -> str:
    """How the user started us: ``pmapviz`` (the installed command) or ``python -m pmapviz``."""
    return "pmapviz" if os.path.basename(sys.argv[0] or "") == "pmapviz" else "python -m pmapviz"


def build_parser(load: Iterable[str] | None = None) -> argparse.ArgumentParser:
    """The ``python -m pmapviz`` parser: one subcommand per entry of :data:`COMMANDS`, with
    the flags of those in ``load`` (None: every one)."""
    parser = argparse.ArgumentParser(prog=_prog(), description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, c in COMMANDS.items():
        p = sub.add_parser(name, help=c.help, description=c.help)
        if load is not None and name not in load:
            continue
        module = command_module(name)
        if name not in OWN_DEVICE_FLAGS:
            cliflags._device_args(p)
        if c.flags:
            getattr(module, c.flags)(p)
        p.set_defaults(func=getattr(module, c.run))
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs one command; its exit status (2, with one line on stderr, for bad input)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    chosen = [a for a in argv[:1] if a in COMMANDS]  # the command named first, if any
    args = build_parser(load=chosen).parse_args(argv)
    args.run_here = run_here  # the doctor runs commands in this process on a one-process chip
    with contextlib.ExitStack() as scope:  # the command's device set (_start) ends with it
        cliflags._SCOPES.append(scope)
        try:
            return args.func(args)
        except valueparse.SettingError as err:
            print(f"pmapviz: {err}", file=sys.stderr)
            return 2
        except BrokenPipeError:  # the reader stopped early (| head): quiet, as Unix tools are
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        finally:
            cliflags._SCOPES.pop()


# Commands that only compute and print: once they have printed, nothing is left to do.
QUICK_EXIT = ("plan", "hlo", "mesh")


# Streamlit's warnings for pages run without its server ("bare mode"), as the doctor's page
# check runs them on purpose: each one's logger, and words of its message.
BARE_MODE_WARNINGS = {
    "streamlit.runtime.scriptrunner_utils.script_run_context": "missing ScriptRunContext",
    "streamlit.runtime.caching.cache_data_api": "No runtime found",
    "streamlit.runtime.state.session_state_proxy": "without `streamlit run`",
    "streamlit": "Streamlit app on a browser",  # its "root" logger
}


# Python warnings a library prints at every start that are no command's output: JAX's advice
# on the TPU machine's kernel setting (2 of the doctor's stderr lines there; the machine's, not
# pmapviz's, to change)
LIBRARY_WARNINGS = ("Transparent hugepages are not enabled",)


def quiet_terminal(env: dict[str, str] | os._Environ = os.environ) -> None:
    """Let no library's log below WARNING, and none of Streamlit's bare-mode warnings, reach
    the terminal: a command prints its own output only. ``logging.disable`` holds whatever
    level a library sets later: Streamlit sets its loggers' to its ``logger.level`` each time
    its config loads ("debug" where a config.toml says so, or where Streamlit runs from
    outside a site-packages, its development mode), JAX to ``JAX_LOGGING_LEVEL`` or
    ``JAX_DEBUG_LOG_MODULES``. The filters sit on Streamlit's loggers themselves, which it
    keeps (it replaces their handlers). XLA's C++ logs: :func:`quiet_native_logs`."""
    logging.disable(logging.INFO)
    for words in LIBRARY_WARNINGS:  # printed by Python's warnings at each start, not logged
        warnings.filterwarnings("ignore", message=words)
    for name, words in BARE_MODE_WARNINGS.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _Without) for f in logger.filters):  # once per logger
            logger.addFilter(_Without(words))
    quiet_native_logs(env)


def quiet_native_logs(env: dict[str, str] | os._Environ = os.environ) -> None:
    """Keep XLA's C++ INFO lines off the terminal, before JAX is imported (the doctor's
    commands and the cluster's workers inherit ``env``): ``TF_CPP_MIN_LOG_LEVEL`` 0 turns them
    on, and so does JAX where ``JAX_LOGGING_LEVEL`` is below WARNING, or where
    ``JAX_DEBUG_LOG_MODULES`` sets its "jax" logger to DEBUG (its C++ level follows)."""
    if env.get("TF_CPP_MIN_LOG_LEVEL", "1").strip() not in ("1", "2", "3"):  # 1: WARNING
        env["TF_CPP_MIN_LOG_LEVEL"] = "1"
    level = env.get("JAX_LOGGING_LEVEL", "").upper()
    if level not in ("WARNING", "ERROR", "CRITICAL") and (
        level or env.get("JAX_DEBUG_LOG_MODULES")
    ):
        env["JAX_LOGGING_LEVEL"] = "WARNING"


class _Without(logging.Filter):
    """Drops a logger's records whose message holds ``words``."""

    def __init__(self, words: str):
        super().__init__()
        self.words = words

    def filter(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` reaches the terminal: not when it says ``words``."""
        return self.words not in record.getMessage()


def run() -> NoReturn:
    """``pmapviz`` and ``python -m pmapviz``: :func:`quiet_terminal`, :func:`main`, then its
    exit status. After a command of QUICK_EXIT the process ends once its output is flushed,
    without tearing down JAX's backend and every module: that teardown took 0.12-0.15 s of
    each JAX process's exit here (a fifth of ``plan``'s whole run), and a command that printed
    its answer has no files, children or threads to leave in order."""
    quiet_terminal()
    stopping.signals_as_interrupt()  # SIGTERM and SIGHUP end a command as Ctrl-C does
    stopping.end_everything_at_exit()  # and no process it started outlives it
    try:
        code = main()
    except KeyboardInterrupt as stop:
        stop = stop if isinstance(stop, stopping.Stop) else stopping.Stop()
        print(f"pmapviz: stopped by {stop}; every process it started is ended", file=sys.stderr)
        code = stop.exit_code
    if sys.argv[1:2] and sys.argv[1] in QUICK_EXIT:
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(OSError, ValueError):  # a reader that stopped early
                stream.flush()
        os._exit(code)
    sys.exit(code)


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
