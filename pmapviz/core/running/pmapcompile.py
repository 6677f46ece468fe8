"""A plan compiled ahead of time: pmap and its one-device jit(vmap) reference, how long each
took, the scratch memory they need (XLA's ``memory_analysis()``), and JAX's own caches kept
bounded while a server compiles program after program."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pmapviz.core.budgets import compiledmemory
from pmapviz.core.devices import compilecache, devicefacts
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.planning.pmapplacement import pmap_sharding


@dataclass(frozen=True)
class Compiled:
    """A plan compiled ahead of time: pmap and the one-device jit(vmap) reference, and how long each
    took to compile."""

    run: Callable  # ahead-of-time compiled pmap, for inputs placed like `placements`
    reference: Callable  # jit(vmap(f)) on one device
    compile_s: float
    reference_compile_s: float
    devices: int = 1  # the devices pmap runs on


JAX_CACHE_EVERY = 8  # new pmap programs between two clears of JAX's own caches
_COMPILES = {"since_clear": 0}
_COMPILES_LOCK = threading.Lock()


def bound_jax_caches(every: int = JAX_CACHE_EVERY) -> bool:
    """Count one newly compiled pmap program; every ``every`` of them, clear JAX's own
    compilation caches (``jax.clear_caches``). Returns whether it cleared.

    JAX 0.10's pmap memoizes its ``jit(shard_map(f))`` wrapper in a cache keyed weakly on f
    whose entry refers back to f, so no entry ever dies: every function pmapped, and every
    shape compiled with it, stays in memory (measured: ~1.5 MiB per new shape; a server kept
    +116 MiB after 50 live runs, and ``jax.clear_caches()`` gave it all back). Compiled
    programs the pages hold (``Compiled``, in bounded caches) are unaffected; a pmap that
    was only in JAX's cache is traced and compiled again on its next call."""
    with _COMPILES_LOCK:
        _COMPILES["since_clear"] += 1
        if _COMPILES["since_clear"] < every:
            return False
        _COMPILES["since_clear"] = 0
    import jax

    jax.clear_caches()
    return True


def own_function(f: Callable) -> Callable:
    """A new function object calling ``f``: JAX's caches keyed on it end with it (``f``
    itself, from ``program.build``, lives as long as the process)."""

    @functools.wraps(f)
    def own(*args):
        return f(*args)

    return own


def forget_pmap(fn: Callable) -> None:
    """Drop pmap's memo of ``fn`` once its program is compiled ahead of time (the Compiled
    holds the executable). JAX 0.10's pmap memoizes its ``jit(shard_map(fn))`` wrapper in a
    cache whose entries refer back to their own keys, so none ever dies (measured: 30 new
    programs kept 51 MiB; evicted, 6.5 MiB). Where that cache is not there (another JAX
    version), :func:`bound_jax_caches` still clears it every few programs."""
    try:
        from jax._src import pmap as jax_pmap  # private: checked, with a fallback

        evict = jax_pmap._cached_shard_map.evict_function
    except (ImportError, AttributeError):
        return  # bound_jax_caches, which compile_plan calls too, clears it every few programs
    evict(fn)


def compile_plan(program: Program, plan: Plan) -> Compiled:
    """Compile pmap (and the jit(vmap) reference) for a valid plan, ahead of time, from
    abstract inputs placed exactly as run_plan places them. Pages cache the result."""
    import time

    import jax
    import jax.numpy as jnp

    # one array per leaf; named afresh, so its compile times are compiles, never cache reads
    fn = compilecache.renamed(plan.leaf_fn(program.build(plan.axis_name)))
    n = plan.devices_used
    specs = [
        jax.ShapeDtypeStruct(
            leaf.shape, jnp.dtype(leaf.dtype), sharding=pmap_sharding(len(leaf.shape), leaf.axis, n)
        )
        for leaf in plan.leaves
    ]
    pm = jax.pmap(
        fn,
        in_axes=plan.leaf_axes,
        out_axes=plan.out_axes,
        axis_name=plan.axis_name,
        devices=devicefacts.local_devices_for_work()[:n],
    )
    with compilecache.kept_out():
        t = time.perf_counter()
        run = pm.lower(*specs).compile()
        compile_s = time.perf_counter() - t
    dev0 = jax.sharding.SingleDeviceSharding(devicefacts.local_devices_for_work()[0])
    ref_specs = [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=dev0) for s in specs]
    ref = jax.jit(
        jax.vmap(fn, in_axes=plan.leaf_axes, out_axes=plan.out_axes, axis_name=plan.axis_name)
    )
    with compilecache.kept_out():
        t = time.perf_counter()
        reference = ref.lower(*ref_specs).compile()
        reference_s = time.perf_counter() - t
    forget_pmap(fn)
    bound_jax_caches()  # the rest: traces of the plan's shapes (planning, time estimates)
    return Compiled(run, reference, compile_s, reference_s, n)


def temporaries(compiled: Compiled) -> int:
    """The most scratch memory either compiled program needs at once, all devices together:
    the one-device reference's ``temp_size_in_bytes``, or pmap's per-device figure times its
    devices (the two run one after the other). 0 where XLA gives no analysis."""
    ref = _temp_bytes(compiled.reference)
    per_device = _temp_bytes(compiled.run)
    return max(ref, per_device * max(1, compiled.devices))


def plan_temporaries(program: Program, plan: Plan) -> int:
    """:func:`temporaries` of the plan's programs, compiled here (never run) before any input
    exists: for actions that run f without keeping a compiled pair (timing, migration)."""
    return temporaries(compile_plan(program, plan))


def _temp_bytes(executable) -> int:
    """Its scratch memory per device (``compiledmemory.footprint``), 0 where XLA gives no
    analysis."""
    fp = compiledmemory.footprint(executable)
    return 0 if fp is None else fp.temporaries
