"""HBM as the compiler counts it: per TPU generation pmapviz offers, the most memory one device
may hold at peak before libtpu refuses the compile, measured once by bisection.

A plain script (JAX and libtpu, nothing of pmapviz): for each generation, a replicated array
f32[rows, 1024] doubled (``jax.jit(lambda a: a * 2)``) on the smallest slice pmapviz offers,
``rows`` bisected until the compile is refused ("Ran out of memory on HBM, the total memory
required for HLO temporaries (17.00G) exceeds available HBM (15.75G)"). It prints, per
generation, the allowance libtpu states in its refusal, the largest peak it accepted
(``memory_analysis()``: arguments + output + temporaries - aliased + generated code) and the
smallest it refused, the libtpu version and the date: the table ``COMPILER_HBM`` in
``pmapviz/core/pods/tpuchips.py`` holds that output.

    .venv/bin/python benchmarks/hbm_allowance.py            # every generation, 16 s here
    .venv/bin/python benchmarks/hbm_allowance.py v5e:2x2    # one slice
"""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import re
import sys

SLICES = ("v4:2x2x1", "v5e:2x2", "v5p:2x2x1", "v6e:2x2")
ROW = 1024  # f32 elements a row: 4 KiB
# libtpu words a refusal two ways: far above the allowance "... the total memory required for
# HLO temporaries (17.00G) exceeds available HBM (15.75G)"; just above it "Ran out of memory in
# memory space hbm. Used 15.75G of 15.75G hbm. Exceeded hbm capacity by 25.0K."
_REFUSAL = re.compile(r"exceeds available HBM \(([0-9.]+)G\)|Used [0-9.]+G of ([0-9.]+)G hbm")


def peak(compiled) -> int:
    m = compiled.memory_analysis()
    return (
        m.argument_size_in_bytes
        + m.output_size_in_bytes
        + m.temp_size_in_bytes
        - m.alias_size_in_bytes
        + m.generated_code_size_in_bytes
    )


def attempt(devices, rows: int):
    """(peak bytes, None) where the compile is accepted, (None, the refusal) where refused."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(devices, ("d",))
    x = jax.ShapeDtypeStruct(
        (rows, ROW), jnp.float32, sharding=NamedSharding(mesh, PartitionSpec())
    )
    try:
        return peak(jax.jit(lambda a: a * 2).lower(x).compile()), None
    except Exception as err:  # noqa: BLE001  (the refusal is the measurement)
        if "Ran out of memory" not in str(err):
            raise
        return None, str(err).strip().splitlines()[0]


def measure(name: str) -> dict:
    from jax.experimental import topologies

    devices = topologies.get_topology_desc(topology_name=name, platform="tpu").devices
    lo, hi = 1, 1
    while attempt(devices, hi)[0] is not None:  # double until refused
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if attempt(devices, mid)[0] is not None:
            lo = mid
        else:
            hi = mid
    accepted, _ = attempt(devices, lo)
    _, refusal = attempt(devices, hi)
    _, far = attempt(devices, hi * 2)
    stated = [float(next(g for g in _REFUSAL.search(r).groups() if g)) for r in (refusal, far)]
    return {
        "slice": name,
        "stated_gib": stated,
        "largest_accepted": accepted,
        "smallest_refused": accepted + 2 * ROW * 4,  # one row more, in and out
        "refusal": refusal,
        "far_refusal": far,
    }


def main(argv: list[str]) -> int:
    os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")
    os.environ.setdefault("ALLOW_MULTIPLE_LIBTPU_LOAD", "1")
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    names = argv or list(SLICES)
    version = importlib.metadata.version("libtpu")
    today = datetime.date.today().isoformat()
    print(f"libtpu {version}, measured {today}")
    print(f"{'slice':<11} {'stated':>9} {'largest accepted':>18} {'smallest refused':>18}")
    print("(stated: the allowance each refusal names, just above the limit / far above it)")
    for name in names:
        r = measure(name)
        stated = "/".join(f"{g:.2f}" for g in r["stated_gib"])
        print(
            f"{r['slice']:<11} {stated:>8}G {r['largest_accepted']:>18,} "
            f"{r['smallest_refused']:>18,}  ({r['largest_accepted'] / 1024**3:.4f} GiB)"
        )
        print(f"    just above: {r['refusal'][:160]}")
        print(f"    far above:  {r['far_refusal'][:160]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
