"""python -m pmapviz doctor: every command and page on the devices here, and a report."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from pmapviz.app import doctorcommands, doctorreport
from pmapviz.app.ui import page_check
from pmapviz.core.devices.cliflags import _print, _settings


def cmd_doctor(args: argparse.Namespace) -> int:
    """Every command and every page on the devices present; a report (see
    pmapviz.app.doctorreport); ``args.run_here`` runs a command in this process
    (cli.run_here), for a chip that serves one."""
    here: Callable[[list[str]], tuple[int, str, str]] = args.run_here
    report = doctorreport.run(
        _settings(args),
        progress=None if args.json else print,
        pages=_pages(),
        here=here,
    )
    _print(args.json, report, [] if args.json else doctorreport.report_lines(report))
    return 0 if report["ok"] else 1


def _pages() -> doctorcommands.PageCheck | str:
    """The page check (the pages ship in the package: a wheel checks them too), or why it
    cannot run here (no Streamlit)."""
    return page_check.section if page_check.available() else doctorcommands.NO_STREAMLIT
