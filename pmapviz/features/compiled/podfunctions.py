"""A notebook's ``f`` and arguments as a program for a TPU slice
(``pmapviz.compiled(f, *args, topology="v5e:4x4")``).

- a plain ``f`` is pmapped as on this machine (``in_axes``, ``out_axes``, ``axis_name``), over
  the slice's devices: each mapped axis becomes the slice's device count, every device keeping
  the block it would have here;
- an ``f`` with ``.lower`` (``jax.jit(f)``) is lowered over the slice's devices on a 1-D mesh
  ``chips``: each argument is split along its first axis where that axis divides evenly over
  the slice, else given whole to every chip (the view's data says which).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pmapviz.core.pods import podprograms
from pmapviz.core.pods.podprograms import Lowered, PodProgram
from pmapviz.core.pods.podtopology import Pod
from pmapviz.core.running.programanalysis import Target
from pmapviz.features.compiled import functionargs


def program_for(
    f: Callable, args: tuple, in_axes: Any = 0, out_axes: Any = 0, axis_name: str = "i"
) -> PodProgram:
    """The program to compile for a slice (ValueError with the fix for bad arguments)."""
    import jax

    if not args:
        raise ValueError("no arguments: give the arrays (or jax.ShapeDtypeStructs) f takes.")
    name = getattr(f, "__name__", None) or type(f).__name__
    structs = [jax.tree.map(functionargs.struct, a) for a in args]
    shapes = [jax.tree.map(lambda s: (s.shape, str(s.dtype)), a) for a in structs]
    key = f"notebook:{name}:{id(f)}:{shapes}:{in_axes}:{out_axes}:{axis_name}"
    if hasattr(f, "lower"):
        return PodProgram(
            key, name, f"{name}.lower(*args)  # on a mesh ('chips',)", _jit_lower(f, structs)
        )
    axes = functionargs.axes(in_axes, len(args))
    n = functionargs.mapped_size(structs, axes)
    code = (
        f"jax.pmap({name}, in_axes={axes if len(axes) > 1 else axes[0]!r}, axis_name={axis_name!r})"
    )
    target = Target(name, code, f, tuple(structs), axes, out_axes, axis_name, n)
    return podprograms.from_target(target, key)


def _jit_lower(f: Callable, structs: list) -> Callable[[Pod, int | None], Lowered]:
    def lower(pod: Pod, _batch: int | None) -> Lowered:
        import jax
        import numpy as np
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        n = pod.n_devices
        mesh = Mesh(np.array(pod.devices), ("chips",))

        def place(s):
            split = s.ndim >= 1 and s.shape[0] % n == 0
            spec = PartitionSpec("chips") if split else PartitionSpec()
            return jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=NamedSharding(mesh, spec))

        placed = [jax.tree.map(place, a) for a in structs]
        order = tuple(int(d.id) for d in mesh.devices.flat)
        return Lowered(f.lower(*placed), order, (("chips", n),))

    return lower
