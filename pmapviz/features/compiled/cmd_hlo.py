"""python -m pmapviz hlo: what XLA compiled for the explorer's plan (the plan command's flags) or
for a collective of the playground: its collectives, cost and memory, four variants."""

from __future__ import annotations

import argparse
import sys

from pmapviz.core.base import valueparse
from pmapviz.core.devices import devicefacts
from pmapviz.core.devices.cliflags import MAX_ELEMENTS_HLO, _print, _settings, _start
from pmapviz.core.drawing import programtables
from pmapviz.core.expressions import collectivedefs
from pmapviz.core.planning import planning
from pmapviz.core.running import programanalysis
from pmapviz.features.collectives import collectiveanalysis, collectivechoices
from pmapviz.features.explorer.cmd_plan import (
    example_shapes,
    plan_args,
    plan_inputs,
    print_plan,
    program_of,
)


def _hlo_args(p: argparse.ArgumentParser) -> None:
    plan_args(p)
    p.add_argument(
        "--collective",
        default=None,
        choices=[c.key for c in collectivedefs.COLLECTIVES],
        help="a collective of the playground instead of --fn",
    )
    p.add_argument("--groups", default=None, help="axis_index_groups, e.g. '0 1 | 2 3'")
    p.add_argument(
        "--perm", default=None, help="ppermute pairs, e.g. '0->1, 1->0' (default: ring right)"
    )
    p.add_argument("--elements", default=None, help="elements per device (default: devices)")


def cmd_hlo(args: argparse.Namespace) -> int:
    """What XLA compiled for the plan or a playground collective: collectives, cost, memory."""
    if args.plan_devices is not None:
        raise valueparse.SettingError("hlo compiles for this process's devices: use --devices.")
    if args.collective is None:
        program = program_of(args)
        shapes, in_axes, out_axes, axis_name, dtypes = plan_inputs(args, program)
    _start(_settings(args), args)
    n = devicefacts.facts().local_count
    if args.collective is None:
        shapes = example_shapes(shapes, program, n)
        p = planning.plan(
            program, shapes, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, dtypes=dtypes
        )
        if not p.ok:
            print_plan(p, program, axis_name)
            return 1
        analysis = programanalysis.analyse_plan(program, p)
    else:
        m = valueparse.parse_int(args.elements or str(n), "--elements", 1, MAX_ELEMENTS_HLO)
        try:
            groups = collectivechoices.parse_groups(args.groups or "", n)
            perm = collectivechoices.parse_pairs(args.perm, n) if args.perm else None
            analysis = collectiveanalysis.analyse_collective(args.collective, n, m, groups, perm)
        except collectivechoices.CollectiveError as err:
            print(f"pmapviz: {err}", file=sys.stderr)
            return 2
    _print(args.json, analysis.to_json(), programtables.summary_lines(analysis))
    return 0
