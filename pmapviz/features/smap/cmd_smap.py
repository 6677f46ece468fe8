"""``python -m pmapviz plan``: the explorer's plan command, and with ``--smap`` the same
settings as JAX runs pmap (its pipeline, from its jaxpr) and as ``jax.smap`` beside it (the
call, its refusal with JAX's words and the fix, or its run checked against pmap and
jit(vmap)). Without ``--smap`` it is ``pmapviz.features.explorer.cmd_plan`` unchanged."""

from __future__ import annotations

import argparse
import json

from pmapviz.core.base import valueparse
from pmapviz.core.devices import devicefacts
from pmapviz.features.explorer import cmd_plan as explorer_plan
from pmapviz.features.smap import smapcompare, smaprefusals
from pmapviz.features.smap.smapsettings import MODES, from_texts


def plan_args(p: argparse.ArgumentParser) -> None:
    """The plan's flags (:func:`pmapviz.features.explorer.cmd_plan.plan_args`) and smap's."""
    explorer_plan.plan_args(p)
    p.add_argument(
        "--smap",
        action="store_true",
        help="also show pmap's pipeline from its jaxpr and the same settings as jax.smap, run "
        "beside pmap and jit(vmap) (exit 0 when smap runs and agrees)",
    )
    p.add_argument(
        "--smap-mesh",
        default=None,
        metavar="N",
        help="smap's mesh: this many devices (default: all of this process's)",
    )
    p.add_argument("--smap-mode", default="Explicit", help=f"smap's axis type: {', '.join(MODES)}")
    p.add_argument(
        "--smap-leave-out",
        action="append",
        default=[],
        choices=("set_mesh", "in_axes", "reshard"),
        help="leave this part out of the smap call, to meet JAX's refusal (repeatable)",
    )


def cmd_plan(args: argparse.Namespace) -> int:
    """The plan (exit 1 when pmap would reject it); with --smap, the smap comparison too."""
    if not getattr(args, "smap", False):
        return explorer_plan.cmd_plan(args)
    program, p = explorer_plan.planned(args, start=True)
    if not smaprefusals.callable_with(p):
        if args.json:
            print(json.dumps({"plan": json.loads(p.to_json()), "smap": None}, indent=2))
        else:
            explorer_plan.print_plan(p, program, p.axis_name)
            print("smap: not called: f's arguments or axes are not known (see the problems)")
        return 1
    n = p.n_devices
    left_out = set(args.smap_leave_out)
    texts = {
        "mesh": args.smap_mesh if args.smap_mesh is not None else str(n),
        "mode": args.smap_mode,
        "setmesh": "0" if "set_mesh" in left_out else "1",
        "inaxes": "0" if "in_axes" in left_out else "1",
        "reshard": "0" if "reshard" in left_out else "1",
    }
    s, errors = from_texts(texts, max(n, len(devicefacts.local_devices_for_work())))
    if errors:
        raise valueparse.SettingError(errors[0].replace("Mesh devices", "--smap-mesh"))
    c = smapcompare.compare(program, p, s)
    if args.json:
        print(json.dumps({"plan": json.loads(p.to_json()), "smap": c.to_dict()}, indent=2))
    else:
        explorer_plan.print_plan(p, program, p.axis_name)
        print("\n".join(smapcompare.text(c)))
    return 0 if c.ok else 1
