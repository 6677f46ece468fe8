"""pmapviz: understand and check ``jax.pmap`` and the parallel JAX that follows it.

The public API, for notebooks and scripts. Each call returns a view that draws itself in a
notebook (``_repr_html_``: the dashboard's own HTML, self-contained), prints as text in a
terminal, and gives its data (``.to_dict()``, ``.to_frame()``):

- :func:`pmapviz.devices` -- this process's devices; ``devices(8)`` first asks for 8 emulated
  CPU devices (JAX fixes the count when it starts, once per process: in a notebook, call it before
  anything else imports JAX).
- :func:`pmapviz.plan` -- what pmap will do with given shapes (a function or a catalog name),
  validated from shapes alone: problems with fixes, the diagrams, each device's slice.
- :func:`pmapviz.show` -- any ``jax.Array`` (or pytree of them) as its sharding really is, from
  ``addressable_shards`` and ``devices_indices_map``: any rank, any mesh.
- :func:`pmapviz.collective` -- a collective (psum, all_gather, ppermute ...): before and after
  on each device, checked against numpy.
- :func:`pmapviz.compiled` -- what XLA made of ``f``: its collectives, memory per device, cost
  and HLO; ``topology="v5e:4x4"`` compiles it for a TPU slice this machine does not have.
- :func:`pmapviz.mesh` -- arrays placed on a named mesh by PartitionSpecs.
- :func:`pmapviz.timing` -- the Timing lab's measurement: pmap, shard_map, NamedSharding and
  vmap, with compile, transfer and compute apart, against the measured floor.
- :func:`pmapviz.pod_sweep` -- one program compiled for TPU slices from 4 to 256 chips: the
  compiler's estimate and the communication model per size.
- :func:`pmapviz.smap` -- pmap's settings as JAX 0.10 runs them (its pipeline, from its jaxpr)
  and as ``jax.smap`` beside it: each device's block beside pmap's slice, checked against pmap
  and ``jit(vmap)``; where smap refuses, JAX's own words and the fix.
- :func:`pmapviz.types` -- every equation of ``f`` with its type as JAX prints it, in Auto,
  Explicit and Manual modes, and the communication the compiled program has for each.
- :func:`pmapviz.exercise` -- the tour's exercises on this process's devices: the task, a hint,
  the worked answer, and an attempt judged as the pages judge it (solved, or JAX's own words).

Importing this package does not import JAX; the first call configures it (unless this process
started JAX itself, whose devices are then used as they are).
"""

from importlib import import_module
from typing import Any

__version__ = "0.1.0"

# public name -> the module that holds it (loaded on first use)
_PUBLIC = {
    "devices": "pmapviz.core.drawing.showdevices",
    "plan": "pmapviz.features.explorer.showplan",
    "show": "pmapviz.core.drawing.showarray",
    "collective": "pmapviz.features.collectives.showcollective",
    "compiled": "pmapviz.features.compiled.showcompiled",
    "mesh": "pmapviz.features.meshes.showmesh",
    "timing": "pmapviz.features.timing.showtiming",
    "pod_sweep": "pmapviz.features.pods.showpod",
    "smap": "pmapviz.features.smap.showsmap",
    "types": "pmapviz.features.types.showtypes",
    "exercise": "pmapviz.features.exercises.showexercise",
}
__all__ = list(_PUBLIC)


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'pmapviz' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_PUBLIC])
