"""python -m pmapviz bench: pmap, vmap, jit with NamedSharding, shard_map and numpy, timed."""

from __future__ import annotations

import argparse
import json
import os
import sys

from pmapviz.core.base import atomicfile, pathparse, valueparse
from pmapviz.core.devices import devicefacts, jaxstartup
from pmapviz.core.devices.cliflags import (
    MAX_BENCH_SIZE,
    MAX_REPEAT,
    _device_set_arg,
    _max_seconds_arg,
    _max_seconds_argv,
    _start,
)
from pmapviz.features.timing import benchmarking, sweepsetup, workloads

DEFAULT_SIZE = 2**20  # the default --size: a million elements


def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", default="dot", choices=sorted(workloads.WORKLOADS))
    p.add_argument(
        "--size",
        default=None,
        help=f"comma-separated sizes, e.g. 65536,1048576 (default {DEFAULT_SIZE:,}, rounded down "
        "to split evenly over every device count)",
    )
    p.add_argument(
        "--devices",
        default=None,
        help="device counts to compare, e.g. 1,2,4,8; on CPU the process gets the "
        "largest (default: 1, 2, 4, ... up to the devices the process has: "
        "$PMAPVIZ_DEVICES or 8 on CPU, the machine's GPUs or TPUs)",
    )
    p.add_argument("--platform", help=f"one of {', '.join(jaxstartup.PLATFORMS)} (default auto)")
    _device_set_arg(p)
    p.add_argument("--impls", default=None, help="comma-separated subset of the implementations")
    p.add_argument("--repeat", default="7", help="timed runs per measurement, 1 to 100")
    _max_seconds_arg(p)
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="write the JSON report to FILE (or stdout without FILE)",
    )


def _bench_inputs(args: argparse.Namespace) -> tuple:
    """Device counts, sizes, implementations, repeat and the --json file (None: stdout or no
    file) from the flags (settings layer), all checked before the sweep starts."""
    ks = (
        valueparse.parse_int_list(
            args.devices, "--devices", jaxstartup.MIN_DEVICES, jaxstartup.MAX_DEVICES
        )
        if args.devices
        else None
    )
    argv = ["--devices", str(max(ks))] if ks else []
    if args.platform:
        argv += ["--platform", args.platform]
    device_settings = jaxstartup.parse_settings(argv + _max_seconds_argv(args), os.environ)
    sizes = valueparse.parse_int_list(args.size, "--size", 1, MAX_BENCH_SIZE) if args.size else None
    impls = (
        [valueparse.parse_choice(i, "--impls", sweepsetup.IMPLS) for i in args.impls.split(",")]
        if args.impls
        else list(sweepsetup.IMPLS)
    )
    repeat = valueparse.parse_int(args.repeat, "--repeat", 1, MAX_REPEAT)
    target = (
        None
        if args.json in (None, "-")  # "-": stdout
        else pathparse.parse_output_path(args.json, "--json", "bench.json")
    )
    return device_settings, ks, sizes, impls, repeat, target


def cmd_bench(args: argparse.Namespace) -> int:
    """Each implementation timed at each size and device count; the report as text or JSON."""
    device_settings, ks, sizes, impls, repeat, target = _bench_inputs(args)
    _start(device_settings, args, "real")
    ks = ks or sweepsetup.device_counts(devicefacts.facts().local_count)  # the devices it has
    if sizes is None:  # the default, split evenly over these counts (and said where it moved)
        sizes = sweepsetup.split_evenly([DEFAULT_SIZE], ks)
        if sizes != [DEFAULT_SIZE] and args.json != "-":
            print(
                f"size {sizes[0]:,}: the default {DEFAULT_SIZE:,} rounded down to split evenly "
                f"over {', '.join(map(str, ks))} devices",
                flush=True,
            )
    try:
        report = benchmarking.sweep(
            workloads.WORKLOADS[args.workload],
            sizes,
            ks,
            impls,
            repeat=repeat,
            progress=None
            if args.json == "-"
            else (
                lambda m, i, t: print(
                    f"[{i}/{t}] {m.impl:12} x{m.devices:<3} size {m.size:>10,}: "
                    f"compile {m.compile_s * 1e3:7.1f} ms  transfer "
                    f"{m.transfer_s * 1e3:7.2f} ms  run {m.run_s_median * 1e3:8.3f}"
                    f" ms  floor {m.floor_s * 1e3:.3f} ms",
                    flush=True,
                )
            ),
        )
    except sweepsetup.BenchError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    data = report.to_json()
    if args.json == "-":
        print(json.dumps(data, indent=2))
    else:
        if target is not None:
            try:  # whole or not at all: a full disk or a kill leaves the previous file
                atomicfile.write_text(target, json.dumps(data, indent=2))
            except atomicfile.NotWritten as err:  # checked before the sweep; a full disk now
                print(f"pmapviz: --json {err}", file=sys.stderr)
                return 1
        print(
            f"memory bandwidth (the floor) {report.floor_method}; {len(report.results)} "
            f"results" + (f", written to {target}" if target else "")
        )
    return 0
