"""python -m pmapviz cluster: a local jax.distributed cluster, or with --join one process of a
real one.
"""

from __future__ import annotations

import argparse
import json
import sys

from pmapviz.core.base import atomicfile, pathparse, valueparse
from pmapviz.core.devices import jaxstartup
from pmapviz.core.devices.cliflags import (
    MAX_CLUSTER_TIMEOUT,
    _exit_on_signals,
    _given,
    _print,
    _settings,
)
from pmapviz.features.cluster import cluster, clusterjoin, clustersettings


def _cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--join",
        action="store_true",
        help="join the real cluster this process was "
        "started in (by srun, mpirun, or on every TPU host) with jax.distributed."
        "initialize() and no arguments; process 0 gathers the report",
    )
    p.add_argument(
        "--report",
        metavar="PATH",
        help="with --join: process 0 writes the report (one JSON object) here",
    )
    p.add_argument("--processes", default="2", help="worker processes, 2 to 4")
    p.add_argument(
        "--local-devices",
        default=None,
        help="CPU devices per process, 1 to 4 "
        f"(default 2); with --join, 1 to {clusterjoin.MAX_LOCAL} emulated CPU devices "
        "(default: the devices JAX gives each process)",
    )
    p.add_argument(
        "--timeout",
        default=None,
        help="seconds before a worker is declared hung, "
        f"1 to 600 (default 45); with --join, 1 to {clusterjoin.MAX_TIMEOUT:.0f} (default "
        f"{clusterjoin.DEFAULT_TIMEOUT:.0f})",
    )
    p.add_argument(
        "--max-bytes",
        help="memory budget, e.g. 4G (default: $PMAPVIZ_MAX_BYTES or "
        "a quarter of the available memory)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def cmd_cluster(args: argparse.Namespace) -> int:
    """A local jax.distributed cluster's local and global devices; with --join, one process
    of a real cluster."""
    if args.join:
        return _cmd_join(args)
    if args.report is not None:
        raise valueparse.SettingError(
            "--report PATH goes with --join (the loopback launch "
            "prints its result; add --json for JSON)."
        )
    processes = valueparse.parse_int(
        args.processes, "--processes", clustersettings.MIN_PROCESSES, clustersettings.MAX_PROCESSES
    )
    local = valueparse.parse_int(
        _given(args.local_devices, "2"),
        "--local-devices",
        clustersettings.MIN_LOCAL,
        clustersettings.MAX_LOCAL,
    )
    timeout = valueparse.parse_float(
        _given(args.timeout, "45"), "--timeout", 1.0, MAX_CLUSTER_TIMEOUT
    )
    jaxstartup.apply(_settings(args))  # the memory budget (--max-bytes / PMAPVIZ_MAX_BYTES)
    _exit_on_signals()
    try:
        res = cluster.launch(processes, local, timeout=timeout)
    except cluster.NoSockets as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return cluster.EXIT_NO_SOCKETS  # this machine's rule, not a failure of the cluster
    except (cluster.ClusterError, OSError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res.to_json(), indent=2))
    else:
        print(
            f"{res.processes} processes x {res.local_devices} devices = {res.global_devices} "
            f"global devices, {res.seconds:.1f} s"
        )
        for pp in res.per_process:
            print(
                f"  process {pp['process_index']}: local devices {pp['local_device_ids']}, "
                f"psum {pp['psum']}, all_gather {pp['all_gather']}"
            )
    return 0


def _cmd_join(args: argparse.Namespace) -> int:
    """One process of a real cluster (pmapviz.features.cluster.clusterjoin): no jaxstartup.apply
    here, since JAX must not start before jax.distributed.initialize(). Process 0 prints the report;
    the others print one line each (nothing with --json, so a launcher's merged output is one
    JSON object)."""
    local = (
        None
        if args.local_devices is None
        else valueparse.parse_int(
            args.local_devices, "--local-devices", clusterjoin.MIN_LOCAL, clusterjoin.MAX_LOCAL
        )
    )
    timeout = valueparse.parse_float(
        _given(args.timeout, f"{clusterjoin.DEFAULT_TIMEOUT:g}"),
        "--timeout",
        clusterjoin.MIN_TIMEOUT,
        clusterjoin.MAX_TIMEOUT,
    )
    target = (
        None
        if args.report is None
        else pathparse.parse_output_path(args.report, "--report", "cluster-report.json")
    )
    try:
        outcome = clusterjoin.join(local, timeout)
    except clusterjoin.JoinError as err:
        print(f"pmapviz: {err}", file=sys.stderr, flush=True)
        return 1
    report, rec = outcome.report, outcome.record
    if report is None:
        if not args.json:
            print(
                f"process {rec['process_index']} on {rec['hostname']}: local devices "
                f"{rec['local_device_ids']}, psum {rec['psum']:g}"
            )
        return 0
    if target is not None:
        try:  # whole or not at all: a full disk or a kill leaves the previous file
            atomicfile.write_text(target, json.dumps(report, indent=2) + "\n")
        except atomicfile.NotWritten as err:
            print(f"pmapviz: --report {err}", file=sys.stderr)
            return 1
    _print(
        args.json,
        report,
        clusterjoin.summary(report) + ([f"report written to {target}"] if target else []),
    )
    return 0 if report["check"]["ok"] else 1
