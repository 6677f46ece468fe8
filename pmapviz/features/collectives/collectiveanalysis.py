"""A collective of the playground as a compiled program: its target for
:func:`pmapviz.core.running.programanalysis.analyse` (the Collectives page, the Compiled page,
``python -m pmapviz hlo --collective`` and the traces read the same analysis)."""

from __future__ import annotations

import functools

from pmapviz.core.expressions import collectivedefs
from pmapviz.core.running.programanalysis import Analysis, Target, analyse
from pmapviz.features.collectives import collectivechoices, collectiveruns


def collective_target(key: str, n: int, m: int, groups=None, perm=None) -> Target:
    """A collective of the playground on n devices with blocks of m float32 elements."""
    import jax
    import jax.numpy as jnp

    c = collectivedefs.BY_KEY[key]
    collectivechoices.check(c, n, m, groups)
    perm = collectivechoices.pairs_for(c, n, perm)
    groups = [list(g) for g in groups] if groups else None
    code = f"jax.pmap(lambda x: {collectivedefs.code_for(c, groups, perm)}, axis_name='i')"
    return Target(
        c.label,
        code,
        collectiveruns.per_device(c, groups, perm),
        (jax.ShapeDtypeStruct((n, m), jnp.float32),),
        (0,),
        0,
        collectivedefs.AXIS,
        n,
    )


def analyse_collective(key: str, n: int, m: int, groups=None, perm=None) -> Analysis:
    """A collective of the playground, compiled and read; cached by setting."""
    frozen_groups = tuple(tuple(g) for g in groups) if groups else None
    return _analyse_collective(key, n, m, frozen_groups, tuple(tuple(p) for p in perm or ()))


@functools.lru_cache(maxsize=64)
def _analyse_collective(key: str, n: int, m: int, groups, perm) -> Analysis:
    return analyse(collective_target(key, n, m, groups, perm or None))
