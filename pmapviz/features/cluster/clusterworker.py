"""One process of a local ``jax.distributed`` cluster (started by
:mod:`pmapviz.features.cluster.cluster`).

    python -m pmapviz.features.cluster.clusterworker --coordinator 127.0.0.1:PORT --num-processes P
        --process-id I --local-devices D [--timeout S] [--parent PID]
    python -m pmapviz.features.cluster.clusterworker --single --local-devices N  # the same, one
    process

With ``--parent PID`` it dies with that process, even when the parent is SIGKILLed. The
coordinator (process 0) listens only on the coordinator address given, 127.0.0.1.

It sets its device count first, joins the cluster, runs a pmap over its local devices with
collectives over the global axis, and prints one JSON line (prefixed ``RESULT ``) with what it saw.
Arguments are parsed, never evaluated.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h


def die_with_parent(parent: int | None) -> None:
    """Linux: have the kernel SIGKILL this process when its parent dies; exit now when the
    parent is already gone (it died before this ran). Elsewhere: only the check."""
    if sys.platform.startswith("linux"):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if parent is not None and os.getppid() != parent:
        print(f"parent {parent} is gone; exiting", flush=True)
        sys.exit(3)


def main(argv: list[str] | None = None) -> int:
    """One worker: joins (or runs alone: --single), runs the check, prints its RESULT line."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--coordinator")
    ap.add_argument("--num-processes", type=int, default=1)
    ap.add_argument("--process-id", type=int, default=0)
    ap.add_argument("--local-devices", type=int, required=True)
    ap.add_argument("--timeout", type=int, default=30)
    ap.add_argument("--single", action="store_true")
    ap.add_argument("--parent", type=int, default=None)
    args = ap.parse_args(argv)
    die_with_parent(args.parent)

    import jax

    jax.config.update("jax_num_cpu_devices", args.local_devices)  # before anything else
    t0 = time.perf_counter()
    if not args.single:
        print(
            f"joining {args.coordinator} as process {args.process_id}/{args.num_processes}",
            flush=True,
        )
        jax.distributed.initialize(
            coordinator_address=args.coordinator,
            num_processes=args.num_processes,
            process_id=args.process_id,
            initialization_timeout=args.timeout,
            coordinator_bind_address=args.coordinator,  # 127.0.0.1:PORT, not [::]:PORT
        )
    init_s = time.perf_counter() - t0
    print(f"joined: {jax.device_count()} global devices", flush=True)

    result = {**run_check(), "init_s": init_s}
    print("RESULT " + json.dumps(result), flush=True)
    if not args.single:
        jax.distributed.shutdown()
    return 0


def run_check() -> dict:
    """The check every process of a cluster runs once it has joined (or alone): a pmap over
    its local devices with ``psum``, ``all_gather`` and ``axis_index`` over the global axis.
    The device at position g of ``jax.devices()`` (the axis's order) holds g + 1, so every
    process must see psum 1 + ... + G and all_gather 1..G. Timings: the first call (trace and
    compile) and the median of 5 steady calls."""
    import jax
    import numpy as np
    from jax import lax

    local = jax.local_devices()
    position = {dev.id: g for g, dev in enumerate(jax.devices())}
    x = np.array([position[dev.id] + 1 for dev in local], dtype=np.float32)

    def f(v):
        return lax.psum(v, "i"), lax.all_gather(v, "i"), lax.axis_index("i")

    pf = jax.pmap(f, axis_name="i")  # no devices=: the axis spans every process's devices
    t = time.perf_counter()
    out = pf(x)
    jax.block_until_ready(out)
    first_s = time.perf_counter() - t
    times = []
    for _ in range(5):
        t = time.perf_counter()
        jax.block_until_ready(pf(x))
        times.append(time.perf_counter() - t)
    psum, gathered = (np.asarray(o.addressable_data(0)) for o in out[:2])
    per_device = [
        {"device": str(s.device), "id": s.device.id, "axis_index": int(np.asarray(s.data)[0])}
        for s in out[2].addressable_shards
    ]
    return {
        "process_index": jax.process_index(),
        "process_count": jax.process_count(),
        "local_device_ids": [dev.id for dev in local],
        "global_device_ids": [dev.id for dev in jax.devices()],
        "global_device_processes": [dev.process_index for dev in jax.devices()],
        "global_devices": jax.device_count(),
        "platform": local[0].platform,
        "device_kind": local[0].device_kind,
        "local_inputs": x.tolist(),
        "psum": float(np.asarray(psum).reshape(-1)[0]),
        "all_gather": np.asarray(gathered).reshape(-1).tolist(),
        "axis_index": [p["axis_index"] for p in per_device],
        "per_device": per_device,
        "first_call_s": first_s,
        "steady_s": sorted(times)[len(times) // 2],
        "max_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,  # KiB
    }


if __name__ == "__main__":
    sys.exit(main())
