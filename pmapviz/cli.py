"""Command-line interface: ``python -m pmapviz <command> [options]``.

Every command takes ``--devices N`` and ``--platform P`` (validated exactly as the app does)
and applies them before JAX starts. Bad input prints one line to stderr and exits 2.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict

from pmapviz import devices


def _device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--devices",
        help=f"emulated CPU devices, {devices.MIN_DEVICES}-"
        f"{devices.MAX_DEVICES} (default: $PMAPVIZ_DEVICES or {devices.DEFAULT_DEVICES})",
    )
    p.add_argument("--platform", help=f"one of {', '.join(devices.PLATFORMS)} (default auto)")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _settings(args: argparse.Namespace) -> devices.Settings:
    argv: list[str] = []
    if args.devices is not None:
        argv += ["--devices", args.devices]
    if args.platform is not None:
        argv += ["--platform", args.platform]
    return devices.parse_settings(argv, os.environ)


def cmd_devices(args: argparse.Namespace) -> int:
    report = devices.describe(_settings(args))
    if args.json:
        out = asdict(report)
        out["count"] = report.count
        print(json.dumps(out, indent=2))
        return 0
    print(
        f"{report.count} {report.platform} device(s), kind {report.device_kind!r}, "
        f"JAX {report.jax_version}, {report.physical_cores} physical core(s)"
    )
    for d in report.devices:
        print(f"  {d.label:>8}  id {d.id:<3} process {d.process_index}")
    for note in report.notes:
        print(f"note: {note}")
    return 0


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str]] = {
    "devices": (cmd_devices, "show the devices this process gets"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pmapviz", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (func, help_text) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        _device_args(p)
        p.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except devices.SettingsError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
