"""python -m pmapviz train: data-parallel training with pmap, checked against one device."""

from __future__ import annotations

import argparse
import json
import sys

from pmapviz.core.base import valueparse
from pmapviz.core.devices import devicefacts
from pmapviz.core.devices.cliflags import MAX_SEED, _settings, _start
from pmapviz.features.training import trainingmodel, trainingrun


def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="linear", choices=trainingmodel.MODELS)
    p.add_argument("--steps", default="100")
    p.add_argument("--batch", default="256", help="global batch, split over the devices")
    p.add_argument("--lr", default="0.05", help="learning rate, above 0 and at most 100")
    p.add_argument("--reduction", default="pmean", choices=trainingmodel.REDUCTIONS)
    p.add_argument("--seed", default="0", help=f"0 to {MAX_SEED:,}")


def cmd_train(args: argparse.Namespace) -> int:
    """Data-parallel training with pmap, checked against one device (exit 1: it diverged)."""
    _start(_settings(args), args)
    cfg = trainingmodel.Config(
        args.model,
        devicefacts.facts().local_count,
        valueparse.parse_int(args.batch, "--batch", 1, trainingmodel.MAX_BATCH),
        valueparse.parse_int(args.steps, "--steps", 1, trainingmodel.MAX_STEPS),
        valueparse.parse_float(args.lr, "--lr", 1e-6, 100.0),
        args.reduction,
        valueparse.parse_int(args.seed, "--seed", 0, MAX_SEED),
    )
    try:
        hist = trainingrun.train(cfg)
    except trainingmodel.TrainError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    out = hist.to_json()
    if args.json:
        for key in ("local_losses", "local_grad_norms"):
            out.pop(key)
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{cfg.model} on {cfg.devices} devices, batch {cfg.batch} ({cfg.local_batch} "
            f"per device), {len(hist.losses)} steps: loss {hist.losses[0]:.4g} -> "
            f"{hist.losses[-1]:.4g}; replicas identical every step: "
            f"{hist.replicas_identical}; max |param diff| vs one device: "
            f"{hist.max_param_diff}"
        )
    if hist.diverged_at is not None:
        print(
            f"pmapviz: training diverged at step {hist.diverged_at + 1}; lower --lr",
            file=sys.stderr,
        )
        return 1
    return 0
