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
    p.add_argument("--max-bytes", help="memory budget per action, e.g. 4G (default: a quarter "
                   "of the available memory)")  # fmt: skip
    _max_seconds_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _settings(args: argparse.Namespace) -> devices.Settings:
    argv: list[str] = []
    if args.devices is not None:
        argv += ["--devices", args.devices]
    if args.platform is not None:
        argv += ["--platform", args.platform]
    if getattr(args, "max_bytes", None) is not None:
        argv += ["--max-bytes", args.max_bytes]
    return devices.parse_settings(argv + _max_seconds_argv(args), os.environ)


def _max_seconds_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--max-seconds", help="time limit per action in seconds, 1 to 3600 "
                   "(default: $PMAPVIZ_MAX_SECONDS or 60)")  # fmt: skip


def _max_seconds_argv(args: argparse.Namespace) -> list[str]:
    value = getattr(args, "max_seconds", None)
    return [] if value is None else ["--max-seconds", value]


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


def _plan_args(p: argparse.ArgumentParser) -> None:
    from pmapviz import catalog

    p.add_argument(
        "--fn",
        default="batched_dot",
        choices=sorted(catalog.BY_KEY),
        help="a function from the catalog",
    )
    p.add_argument(
        "--shape",
        action="append",
        metavar="SHAPE",
        help="one per argument, e.g. --shape 8,1250000,3 (default: the fn's example)",
    )
    p.add_argument("--in-axes", help="comma-separated, one per argument, e.g. 0,None")
    p.add_argument("--out-axes", default=None, help="an integer or None (default: the fn's)")
    p.add_argument("--axis-name", default=None, help="e.g. i")
    p.add_argument("--dtype", action="append", help="one per argument (default float32)")
    p.add_argument("--plan-devices", type=int, default=None,
                   help="plan for this many devices (default: this process's count); may be "
                   "larger than the machine has")  # fmt: skip


def _plan_json(p) -> dict:
    return {
        "ok": p.ok,
        "problems": [{"code": q.code, "message": q.message, "fix": q.fix} for q in p.problems],
        "devices_used": p.devices_used,
        "n_devices": p.n_devices,
        "arg_names": list(p.arg_names),
        "arg_shapes": [list(s) for s in p.arg_shapes],
        "in_axes": list(p.in_axes),
        "out_axes": p.out_axes,
        "axis_name": p.axis_name,
        "per_device_in_shapes": [list(s) for s in p.per_device_in_shapes],
        "out_shapes": p.out_shapes,
        "per_device_out_shapes": p.per_device_out_shapes,
        "out_dtypes": p.out_dtypes,
        "notes": list(p.notes),
    }


def cmd_plan(args: argparse.Namespace) -> int:
    from pmapviz import catalog, planning

    settings = _settings(args)
    program = catalog.get(args.fn)
    try:
        shapes = (
            [planning.parse_shape(s, f"--shape {k + 1}") for k, s in enumerate(args.shape)]
            if args.shape
            else list(program.default_shapes)
        )
        if args.in_axes is None:
            in_axes = tuple(program.default_in_axes)
        else:
            in_axes = tuple(planning.parse_axis(a, "--in-axes") for a in args.in_axes.split(","))
        out_axes = (
            program.default_out_axes
            if args.out_axes is None
            else planning.parse_axis(args.out_axes, "--out-axes")
        )
        axis_name = planning.parse_axis_name(args.axis_name)
    except planning.InputError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    if len(shapes) != program.n_args:
        names = ", ".join(program.arg_names)
        print(f"pmapviz: {args.fn} takes {program.n_args} argument(s) ({names}); "
              "give --shape once for each.", file=sys.stderr)  # fmt: skip
        return 2
    n = args.plan_devices
    if n is None:
        devices.apply(settings)
    p = planning.plan(program, shapes, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name,
                      n_devices=n, dtypes=args.dtype or None)  # fmt: skip
    if args.json:
        print(json.dumps(_plan_json(p), indent=2))
    else:
        fmt = planning.fmt_shape
        print(f"f({', '.join(program.arg_names)}) = {program.body(axis_name)}, "
              f"pmap over {p.n_devices} device(s): " + ("OK" if p.ok else "NOT OK"))  # fmt: skip
        for name, shape, ax in zip(p.arg_names, p.arg_shapes, p.in_axes, strict=True):
            print(f"  {name}: {fmt(shape)} in_axes={ax}")
        if p.ok:
            print(f"  each of {p.devices_used} device(s) computes {p.per_device_out_shapes}; "
                  f"result {p.out_shapes}")  # fmt: skip
        for q in p.problems:
            print(f"  problem [{q.code}]: {q.message}\n    fix: {q.fix}")
        for note in p.notes:
            print(f"  note: {note}")
    return 0 if p.ok else 1


def _dot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", default="10000000", help="number of pairs of 3-vectors (default 10M)")
    p.add_argument("--repeat", type=int, default=5, help="timed runs after a warm-up")
    p.add_argument("--seed", type=int, default=0)


def cmd_dot(args: argparse.Namespace) -> int:
    from pmapviz import dotproduct

    devices.apply(_settings(args))
    try:
        pairs = int(planning_int(args.pairs, "--pairs"))
        res = dotproduct.run_dot(pairs, seed=args.seed, repeat=max(1, args.repeat), progress=(
            None if args.json else lambda text, frac: print(f"[{frac:4.0%}] {text}", flush=True)
        ))  # fmt: skip
    except (dotproduct.DotError, ValueError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    if args.json:
        out = res.to_json()
        out.pop("per_device")
        print(json.dumps(out, indent=2))
    else:
        print(f"pmap out {res.pmap_out_shape} -> reshape -> {res.flat_shape}; vs jit(vmap(dot)): "
              f"max |diff| {res.max_abs_diff:.3g}, allclose={res.allclose}")  # fmt: skip
        print(f"compile {res.compile_s * 1e3:.0f} ms, transfer {res.transfer_s * 1e3:.0f} ms, "
              f"run {res.run_s * 1e3:.1f} ms (median); one-device vmap run "
              f"{res.vmap_run_s * 1e3:.1f} ms; peak RSS {res.peak_rss_mb:.0f} MB")  # fmt: skip
    return 0 if res.allclose else 1


def _bench_args(p: argparse.ArgumentParser) -> None:
    from pmapviz import benchmarking

    p.add_argument("--workload", default="dot", choices=sorted(benchmarking.WORKLOADS))
    p.add_argument("--size", default="1048576", help="comma-separated sizes, e.g. 65536,1048576")
    p.add_argument("--devices", default=None,
                   help="device counts to compare, e.g. 1,2,4,8; the process gets the largest "
                   "(default: 1, 2, 4, ... up to $PMAPVIZ_DEVICES or 8)")  # fmt: skip
    p.add_argument("--platform", help=f"one of {', '.join(devices.PLATFORMS)} (default auto)")
    p.add_argument("--impls", default=None, help="comma-separated subset of the implementations")
    p.add_argument("--repeat", type=int, default=7)
    _max_seconds_arg(p)
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="write the JSON report to FILE (or stdout without FILE)",
    )


def cmd_bench(args: argparse.Namespace) -> int:
    from pmapviz import benchmarking as bench

    try:
        ks = ([planning_int(k, "--devices") for k in args.devices.split(",") if k.strip()]
              if args.devices else None)  # fmt: skip
        argv = ["--devices", str(max(ks))] if ks else []
        if args.platform:
            argv += ["--platform", args.platform]
        settings = devices.parse_settings(argv + _max_seconds_argv(args), os.environ)
        devices.apply(settings)
        ks = ks or bench.device_counts(settings.devices)
        sizes = [planning_int(s, "--size") for s in args.size.split(",") if s.strip()]
        impls = args.impls.split(",") if args.impls else list(bench.IMPLS)
        report = bench.sweep(bench.WORKLOADS[args.workload], sizes, ks, impls,
                             repeat=max(1, args.repeat), progress=None if args.json == "-" else (
            lambda m, i, t: print(f"[{i}/{t}] {m.impl:12} x{m.devices:<3} size {m.size:>10,}: "
                                  f"compile {m.compile_s * 1e3:7.1f} ms  transfer "
                                  f"{m.transfer_s * 1e3:7.2f} ms  run {m.run_s_median * 1e3:8.3f}"
                                  f" ms  floor {m.floor_s * 1e3:.3f} ms", flush=True)))  # fmt: skip
    except (bench.BenchError, devices.SettingsError, ValueError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    data = report.to_json()
    if args.json == "-":
        print(json.dumps(data, indent=2))
    else:
        if args.json:
            with open(args.json, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2)
        print(f"memory bandwidth {report.bandwidth_gbs:.1f} GB/s; {len(report.results)} "
              f"results" + (f", written to {args.json}" if args.json else ""))  # fmt: skip
    return 0


def _train_args(p: argparse.ArgumentParser) -> None:
    from pmapviz import training

    p.add_argument("--model", default="linear", choices=training.MODELS)
    p.add_argument("--steps", default="100")
    p.add_argument("--batch", default="256", help="global batch, split over the devices")
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--reduction", default="pmean", choices=training.REDUCTIONS)
    p.add_argument("--seed", type=int, default=0)


def cmd_train(args: argparse.Namespace) -> int:
    from pmapviz import training

    settings = _settings(args)
    devices.apply(settings)
    import jax

    try:
        cfg = training.Config(args.model, jax.local_device_count(),
                              planning_int(args.batch, "--batch"),
                              planning_int(args.steps, "--steps"), args.lr, args.reduction,
                              args.seed)  # fmt: skip
        hist = training.train(cfg)
    except (training.TrainError, ValueError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    out = hist.to_json()
    if args.json:
        for key in ("local_losses", "local_grad_norms"):
            out.pop(key)
        print(json.dumps(out, indent=2))
    else:
        print(f"{cfg.model} on {cfg.devices} devices, batch {cfg.batch} ({cfg.local_batch} "
              f"per device), {len(hist.losses)} steps: loss {hist.losses[0]:.4g} -> "
              f"{hist.losses[-1]:.4g}; replicas identical every step: "
              f"{hist.replicas_identical}; max |param diff| vs one device: "
              f"{hist.max_param_diff}")  # fmt: skip
    if hist.diverged_at is not None:
        print(f"pmapviz: training diverged at step {hist.diverged_at + 1}; lower --lr",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


def _cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--processes", default="2", help="worker processes, 2 to 4")
    p.add_argument("--local-devices", default="2", help="CPU devices per process, 1 to 4")
    p.add_argument("--timeout", default="45", help="seconds before a worker is declared hung, "
                   "1 to 600")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _exit_on_signals() -> None:
    """SIGTERM, SIGINT, SIGHUP exit through the ``finally`` blocks, which kill the workers'
    process groups (and the workers die with this process anyway: worker.die_with_parent)."""
    import signal

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _exit)


def cmd_cluster(args: argparse.Namespace) -> int:
    from pmapviz import cluster

    try:
        procs = planning_int(args.processes, "--processes")
        local = planning_int(args.local_devices, "--local-devices")
        timeout = cluster.parse_timeout(args.timeout)
        cluster.validate(procs, local, timeout)
    except (cluster.ClusterError, ValueError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    _exit_on_signals()
    try:
        res = cluster.launch(procs, local, timeout=timeout)
    except (cluster.ClusterError, OSError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res.to_json(), indent=2))
    else:
        print(f"{res.processes} processes x {res.local_devices} devices = {res.global_devices} "
              f"global devices, {res.seconds:.1f} s")  # fmt: skip
        for pp in res.per_process:
            print(f"  process {pp['process_index']}: local devices {pp['local_device_ids']}, "
                  f"psum {pp['psum']}, all_gather {pp['all_gather']}")  # fmt: skip
    return 0


def planning_int(text: str, name: str) -> int:
    raw = text.replace("_", "").replace(",", "").strip()
    if not raw.isdigit():
        raise ValueError(f"{name} {text!r} is not a whole number, e.g. {name} 10000000.")
    return int(raw)


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str, Callable | None]] = {
    "devices": (cmd_devices, "show the devices this process gets", None),
    "plan": (cmd_plan, "validate shapes and axes for pmap, and give the result shapes", _plan_args),
    "dot": (cmd_dot, "the seed's pmap(vmap(dot)) example, checked against vmap", _dot_args),
    "train": (
        cmd_train,
        "data-parallel training with pmap, checked against one device",
        _train_args,
    ),
    "cluster": (
        cmd_cluster,
        "a local jax.distributed cluster: local vs global devices",
        _cluster_args,
    ),
    "bench": (cmd_bench, "time pmap, vmap, jit+NamedSharding, shard_map and numpy", _bench_args),
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m pmapviz", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (func, help_text, extra) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name not in ("bench", "cluster"):  # they set device counts their own way
            _device_args(p)
        if extra:
            extra(p)
        p.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except devices.SettingsError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
