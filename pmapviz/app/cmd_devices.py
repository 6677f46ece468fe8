"""python -m pmapviz devices: the devices this process gets."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict

from pmapviz.core.budgets import memorypool
from pmapviz.core.devices import devicefacts, devicewords, jaxstartup
from pmapviz.core.devices.cliflags import _settings, _start


def cmd_devices(args: argparse.Namespace) -> int:
    """The devices this process gets, every set beside them, their memory and the budgets."""
    _start(_settings(args), args)
    report = jaxstartup.describe(jaxstartup.applied_settings())
    facts, budget = report.facts, memorypool.budget()
    stats = devicefacts.device_memory()
    started = devicefacts.startup()
    if args.json:
        out = {
            "requested": asdict(report.requested),
            **devicewords.facts_json(facts),
            "sets": [devicewords.facts_json(f) for f in report.sets],
            "startup": None if started is None else asdict(started),
            "notes": list(report.notes),
            "device_memory": None if stats is None else [asdict(m) for m in stats],
            "budget": asdict(budget),
        }
        print(json.dumps(out, indent=2))
        return 0
    for f in report.sets:
        mark = " (this command's set)" if f.platform == facts.platform and f.beside else ""
        print(
            f"{devicewords.summary(f)}: platform {f.platform}, kind {f.device_kind!r}, "
            f"JAX {f.jax_version}, {f.physical_cores} physical core(s){mark}"
        )
        for d in f.devices:
            print(f"  {d.label:>8}  id {d.id:<3} process {d.process_index}")
    for line in memorypool.budget_lines(budget, stats) + (
        devicefacts.startup_lines(started) if started else []
    ):
        print(line.replace("**", "").replace("`", ""))
    for note in (*report.notes, *facts.hints):
        print(f"note: {note}")
    return 0
