"""python -m pmapviz dot: the seed's pmap(vmap(dot)) example, checked against vmap."""

from __future__ import annotations

import argparse
import json
import sys

from pmapviz.core.base import valueparse
from pmapviz.core.devices import devicefacts
from pmapviz.core.devices.cliflags import MAX_PAIRS, MAX_REPEAT, MAX_SEED, _settings, _start
from pmapviz.core.planning import seedpairs
from pmapviz.features.live import dotproduct


def _dot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--pairs",
        default=None,
        help="number of pairs of 3-vectors, a multiple of the devices (default: the seed's "
        "10,000,000, or the largest multiple of the devices below it)",
    )
    p.add_argument("--repeat", default="3", help="timed runs after a warm-up, 1 to 100")
    p.add_argument("--seed", default="0", help=f"0 to {MAX_SEED:,}")


def cmd_dot(args: argparse.Namespace) -> int:
    """The seed's pmap(vmap(dot)) example, timed and checked against jit(vmap(dot))."""
    _start(_settings(args), args)
    if args.pairs is None:  # the seed's pairs as they split over this process's devices
        pairs = seedpairs.split(devicefacts.facts().local_count).used
    else:
        pairs = valueparse.parse_int(args.pairs, "--pairs", dotproduct.MIN_PAIRS, MAX_PAIRS)
    repeat = valueparse.parse_int(args.repeat, "--repeat", 1, MAX_REPEAT)
    seed = valueparse.parse_int(args.seed, "--seed", 0, MAX_SEED)
    try:
        res = dotproduct.run_dot(
            pairs,
            seed=seed,
            repeat=repeat,
            progress=(
                None if args.json else lambda text, frac: print(f"[{frac:4.0%}] {text}", flush=True)
            ),
        )
    except dotproduct.DotError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    if args.json:
        out = res.to_json()
        out.pop("per_device")
        print(json.dumps(out, indent=2))
    else:
        print(
            f"pmap out {res.pmap_out_shape} -> reshape -> {res.flat_shape}; vs jit(vmap(dot)): "
            f"max |diff| {res.max_abs_diff:.3g}, allclose={res.allclose}"
        )
        shared = " (the devices share the host's memory: no copy)" if res.zero_copy else ""
        print(
            f"compile {res.compile_s * 1e3:.0f} ms, transfer {res.transfer_s * 1e3:.1f} ms"
            f"{shared}, run {res.run_s * 1e3:.1f} ms (median); one-device vmap run "
            f"{res.vmap_run_s * 1e3:.1f} ms; host memory grew {res.host_growth_mb or 0:.0f} "
            "MB"
        )
    return 0 if res.allclose else 1
