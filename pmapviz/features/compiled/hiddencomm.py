"""Communication that user code does without saying so: ``out[0]`` on a pmap output, a jitted
function on one, replicating parameters; each compiled (its collectives read from the HLO),
timed, and set beside its fix."""

from __future__ import annotations

import statistics
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pmapviz.core.devices import devicefacts, devicerates
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.core.running.programanalysis import Row, rows_for
from pmapviz.core.xla.hlo import parse_hlo


@dataclass(frozen=True)
class Hidden:
    """A line of user code that communicates without saying so, beside its fix; both compiled
    (their collectives read from HLO) and timed (median of a few calls, warm)."""

    label: str
    code: str
    rows: tuple[Row, ...]  # what it compiles to
    fix_code: str
    fix_rows: tuple[Row, ...]
    time_s: float
    fix_time_s: float
    same_values: bool  # the fix returns what the original returns
    note: str

    def to_json(self) -> dict:
        """The line and its fix, their collectives and times, as JSON."""
        return {
            "label": self.label,
            "code": self.code,
            "collectives": [r.to_json() for r in self.rows],
            "fix_code": self.fix_code,
            "fix_collectives": [r.to_json() for r in self.fix_rows],
            "time_s": self.time_s,
            "fix_time_s": self.fix_time_s,
            "same_values": self.same_values,
            "note": self.note,
        }


def median_time(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Median seconds of ``fn()`` (:func:`pmapviz.core.devices.devicefacts.timed_calls`)."""
    return statistics.median(devicerates.timed_calls(fn, repeat)[1])


def _rows_of(jitted, *args, n: int) -> tuple[Row, ...]:
    return rows_for(parse_hlo(jitted.lower(*args).compile().as_text()), n)


def hidden_communication(n: int, m: int = 1024, repeat: int = 5) -> list[Hidden]:
    """Three common ways to communicate by accident with a pmap output, each found in HLO."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    x = jax.device_put(
        np.arange(1, n * m + 1, dtype=np.float32).reshape(n, m), pmap_sharding(2, 0, n)
    )
    out = jax.pmap(lambda v: v * 2, devices=devicefacts.local_devices_for_work()[:n])(x)
    shard0 = out.addressable_shards[0].data  # device 0's block, shape (1, m)
    take0, take0_twice = jax.jit(lambda a: a[0]), jax.jit(lambda a: a[0] * 2)
    cases = [
        (
            "index a pmap output",
            "out[0]",
            lambda: out[0],
            _rows_of(take0, out, n=n),
            "out.addressable_shards[0].data[0]",
            lambda: shard0[0],
            _rows_of(take0, shard0, n=n),
            "Indexing the global array asks every device for its part of row 0: a masked "
            "all-reduce. The shard is already on device 0.",
        ),
        (
            "a jitted function on a pmap output",
            "jax.jit(lambda a: a[0] * 2)(out)",
            lambda: take0_twice(out),
            _rows_of(take0_twice, out, n=n),
            "jax.jit(lambda b: b[0] * 2)(out.addressable_shards[0].data)",
            lambda: take0_twice(shard0),
            _rows_of(take0_twice, shard0, n=n),
            "jit follows the input's sharding: over all devices, so reading one device's block "
            "becomes a collective.",
        ),
    ]
    found = [_measure(*c, repeat=repeat) for c in cases]
    devs = devicefacts.local_devices_for_work()
    w0 = jax.device_put(np.arange(1, m + 1, dtype=np.float32), devs[0])
    rep = jax.device_put(w0, NamedSharding(pmap_sharding(1, 0, n).mesh, PartitionSpec()))
    scale = jax.pmap(lambda w, v: w * v, in_axes=(None, 0), devices=devs[:n])
    rows = lambda w: rows_for(parse_hlo(scale.lower(w, x).compile().as_text()), n)  # noqa: E731
    found.append(
        _measure(
            "replicating parameters",
            "jax.pmap(f, in_axes=(None, 0))(w_on_device_0, x)",
            lambda: scale(w0, x),
            rows(w0),
            "w = jax.device_put(w, NamedSharding(mesh, P()))  # once; then the same call",
            lambda: scale(rep, x),
            rows(rep),
            "A broadcast argument that lives on one device is copied to every device on every "
            "call: no collective in the HLO, the copies happen before the program runs. Place it "
            "replicated once.",
            repeat=repeat,
        )
    )
    return found


def _measure(label, code, run, rows, fix_code, fix, fix_rows, note, repeat) -> Hidden:
    import numpy as np

    same = bool(np.array_equal(np.asarray(run()), np.asarray(fix())))
    return Hidden(
        label,
        code,
        rows,
        fix_code,
        fix_rows,
        median_time(run, repeat),
        median_time(fix, repeat),
        same,
        note,
    )


def hidden_table(n: int) -> list[dict]:
    """:func:`hidden_communication` as table rows (ms; collectives by kind)."""
    return [
        {
            "what": h.label,
            "code": h.code,
            "compiles to": ", ".join(r.hlo.kind for r in h.rows) or "no collective",
            "time (ms)": round(h.time_s * 1e3, 3),
            "fix": h.fix_code,
            "fix compiles to": ", ".join(r.hlo.kind for r in h.fix_rows) or "no collective",
            "fix time (ms)": round(h.fix_time_s * 1e3, 3),
            "same values": h.same_values,
            "note": h.note,
        }
        for h in hidden_communication(n)
    ]
