"""The small runs that show what pmap does, run for real: hello-pmap (double one element per
device) read back from the shards, and the seed's dot products three ways (pmap, shard_map,
and jit over a NamedSharding)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pmapviz.core.devices import devicefacts
from pmapviz.core.planning.arrayshards import Shard, place_on_devices, shards_of
from pmapviz.core.planning.pmapplacement import pmap_sharding


@dataclass(frozen=True)
class HelloResult:
    """``pmap(lambda x: x * 2)(arange(n))``, as the devices hold it."""

    inputs: list[Shard]
    outputs: list[Shard]
    values: np.ndarray  # the gathered global output
    sharding: str


def hello_program(n_devices: int) -> Callable:
    """The compiled-on-first-call program of the home page: double every element, on the
    current device set's first ``n_devices`` devices."""
    import jax

    return jax.pmap(lambda x: x * 2, devices=devicefacts.local_devices_for_work()[:n_devices])


def run_hello(program: Callable, n_devices: int) -> HelloResult:
    """Run ``program`` (``hello_program(n_devices)``) on ``arange(n_devices)``, one element
    per device."""

    x = np.arange(n_devices, dtype=np.int32)
    placed = place_on_devices(x, devicefacts.local_devices_for_work()[:n_devices])
    y = program(placed)
    y.block_until_ready()
    return HelloResult(
        inputs=shards_of(placed),
        outputs=shards_of(y),
        values=np.asarray(y),
        sharding=repr(y.sharding),
    )


def hello_rows(hello: HelloResult) -> list[tuple[str, list[tuple[str, int | None, str]]]]:
    """The hello-pmap as device-aligned rows (device, slice, x, y), read from the shards."""

    def value(s: Shard) -> str:
        return ", ".join(str(v) for v in s.data.tolist())

    return [
        (
            "device",
            [(s.device, s.position, f"{s.device} (id {s.device_id})") for s in hello.outputs],
        ),
        (
            "slice",
            [(s.index_text, None, f"{s.device} holds y{s.index_text}") for s in hello.outputs],
        ),
        (
            "x",
            [(value(s), s.position, f"{s.device} received x{s.index_text}") for s in hello.inputs],
        ),
        (
            "y = x * 2",
            [(value(s), s.position, f"{s.device} computed y{s.index_text}") for s in hello.outputs],
        ),
    ]


def three_ways(n: int, block: int = 1000, seed: int = 0) -> dict:
    """The seed's dot products computed three ways on n devices: jax.pmap (per-device view,
    rank-reducing), jax.shard_map (per-device view, rank-preserving) and jax.jit over inputs
    placed with a NamedSharding (global view). Returns shapes, shardings and the largest
    difference between them (they should agree exactly)."""
    import jax
    import jax.numpy as jnp
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n * block, 3), dtype=np.float32)
    y = rng.standard_normal((n * block, 3), dtype=np.float32)
    dot = jax.vmap(jnp.dot)
    shard = pmap_sharding(3, 0, n)
    out_pmap = jax.pmap(dot, devices=devicefacts.local_devices_for_work()[:n])(
        jax.device_put(x.reshape(n, block, 3), shard), jax.device_put(y.reshape(n, block, 3), shard)
    )
    mesh = Mesh(np.array(devicefacts.local_devices_for_work()[:n]), ("i",))
    rows = NamedSharding(mesh, PartitionSpec("i"))
    xs, ys = jax.device_put(x, rows), jax.device_put(y, rows)
    out_sm = jax.jit(
        jax.shard_map(
            dot, mesh=mesh, in_specs=(PartitionSpec("i"),) * 2, out_specs=PartitionSpec("i")
        )
    )(xs, ys)
    out_jit = jax.jit(dot)(xs, ys)
    flat = np.asarray(out_pmap).reshape(-1)
    return {
        "pmap_shape": tuple(out_pmap.shape),
        "shard_map_shape": tuple(out_sm.shape),
        "jit_shape": tuple(out_jit.shape),
        "shard_map_sharding": str(out_sm.sharding.spec),
        "jit_sharding": str(out_jit.sharding.spec),
        "max_diff_shard_map": float(np.abs(flat - np.asarray(out_sm)).max()),
        "max_diff_jit": float(np.abs(flat - np.asarray(out_jit)).max()),
        "jit_devices": len(out_jit.sharding.device_set),
    }
