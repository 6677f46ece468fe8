"""The command line's shared flags and start-up: --devices, --platform, --device-set and the
budgets, checked by the settings layer and applied before JAX starts; the limits every command's
numbers are held to.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

from pmapviz.core.base import stopping
from pmapviz.core.devices import compilecache, devicefacts, deviceset, jaxstartup


def _device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--devices",
        help=f"emulated CPU devices, {jaxstartup.MIN_DEVICES}-"
        f"{jaxstartup.MAX_DEVICES} (default: $PMAPVIZ_DEVICES or "
        f"{jaxstartup.DEFAULT_DEVICES}); GPUs "
        "and TPUs are used as the machine has them",
    )
    p.add_argument("--platform", help=f"one of {', '.join(jaxstartup.PLATFORMS)} (default auto)")
    _device_set_arg(p)
    p.add_argument(
        "--max-bytes",
        help="the host memory budget, shared by every action at once, "
        "e.g. 4G (default: a quarter of the available memory)",
    )
    p.add_argument(
        "--max-device-bytes",
        help="device memory budget of the server on GPUs and "
        "TPUs, e.g. 16G (default: a quarter of the fullest device's free "
        "memory)",
    )
    _max_seconds_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _device_set_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device-set",
        default="auto",
        metavar="SET",
        help="where the machine has GPUs or TPUs, the process holds them and "
        "--devices emulated CPU devices beside them: cpu, gpu or tpu runs on that "
        "set; auto (default) on the larger set for lessons, on the machine's own "
        "devices for timing",
    )


def _start(
    device_settings: jaxstartup.Settings, args: argparse.Namespace, need: str = "many"
) -> str:
    """Start JAX with ``device_settings`` and run the rest of the command on the device set
    ``--device-set`` names (``auto``: the set ``need`` prefers, a ``deviceset.NEEDS`` word).
    Returns the set's name."""
    jaxstartup.apply(device_settings)
    cache_note = compilecache.note()
    if cache_note and getattr(args, "command", "") != "devices":  # devices prints its notes
        print(f"pmapviz: {cache_note}", file=sys.stderr)
    name = deviceset.parse(getattr(args, "device_set", None) or "auto", "--device-set")
    name = deviceset.default(need) if name == "auto" else name
    _SCOPES[-1].enter_context(deviceset.use(name))  # until the command returns (main)
    if deviceset.has_two() and getattr(args, "command", "") != "devices":  # it lists them all
        print(set_line(name), file=sys.stderr)
    return name


def set_line(name: str) -> str:
    """Which of two sets a command runs on, and how to pick the other (stderr: the output
    stays the command's own)."""
    other = next(s for s in deviceset.names() if s != name)
    return (
        f"pmapviz: on {devicefacts.facts(name).devices_phrase()} "
        f"(--device-set {other}: {devicefacts.facts(other).devices_phrase()})"
    )


_SCOPES: list[contextlib.ExitStack] = []  # one per command running (main), innermost last


def _settings(args: argparse.Namespace) -> jaxstartup.Settings:
    argv: list[str] = []
    if getattr(args, "devices", None) is not None:
        argv += ["--devices", args.devices]
    if getattr(args, "platform", None) is not None:
        argv += ["--platform", args.platform]
    if getattr(args, "max_bytes", None) is not None:
        argv += ["--max-bytes", args.max_bytes]
    if getattr(args, "max_device_bytes", None) is not None:
        argv += ["--max-device-bytes", args.max_device_bytes]
    return jaxstartup.parse_settings(argv + _max_seconds_argv(args), os.environ)


def _max_seconds_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-seconds",
        help="time limit per action in seconds, 1 to 3600 (default: $PMAPVIZ_MAX_SECONDS or 60)",
    )
    p.add_argument(
        compilecache.FLAG,
        metavar="DIR",
        help="keep compiled programs in DIR between runs, or 'off' (default: "
        f"${compilecache.ENV} or ~/.cache/pmapviz/jax)",
    )


def _max_seconds_argv(args: argparse.Namespace) -> list[str]:
    """The time limit and the compilation cache as typed, for the settings layer."""
    argv = []
    if getattr(args, "max_seconds", None) is not None:
        argv += ["--max-seconds", args.max_seconds]
    if getattr(args, "compile_cache", None) is not None:
        argv += [compilecache.FLAG, args.compile_cache]
    return argv


def _print(as_json: bool, data: dict, lines: list[str]) -> None:
    """A command's result: one JSON object, or its lines of text."""
    print(json.dumps(data, indent=2) if as_json else "\n".join(lines))


def _exit_on_signals() -> None:
    """SIGTERM, SIGINT, SIGHUP end the command through its ``finally`` blocks, which kill the
    workers' process groups (the workers die with this process anyway:
    worker.die_with_parent): :func:`pmapviz.core.base.stopping.signals_as_interrupt`."""
    stopping.signals_as_interrupt()


def _given(value: str | None, default: str) -> str:
    """A flag's text, or its default where it was not given (an empty text is given)."""
    return default if value is None else value


EXIT_NOT_HERE = 3  # what this machine cannot do (no sockets, no libtpu): its rule, not a failure
MAX_PLAN_DEVICES = 65_536


MAX_ELEMENTS_HLO = 2**24


MAX_PAIRS = 10**9


MAX_REPEAT = 100


MAX_SEED = 2**32 - 1


MAX_BENCH_SIZE = 2**32


MAX_CLUSTER_TIMEOUT = 600.0
