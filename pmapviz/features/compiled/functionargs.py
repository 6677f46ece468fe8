"""A notebook's function arguments, read as pmap reads them: each leaf's shape and dtype, one
``in_axes`` entry per argument, and the one size every mapped axis has (the device count); each
refusal a ValueError with the fix."""

from __future__ import annotations

from typing import Any

from pmapviz.core.base.valuetext import fmt_shape


def struct(leaf: Any):
    """The shape and dtype of one argument leaf (JAX's canonical dtype: float32 unless x64)."""
    import jax
    import numpy as np

    shape = getattr(leaf, "shape", None)
    dtype = getattr(leaf, "dtype", None)
    if shape is None or dtype is None:
        arr = np.asarray(leaf)
        shape, dtype = arr.shape, arr.dtype
    return jax.ShapeDtypeStruct(tuple(shape), jax.dtypes.canonicalize_dtype(dtype))


def axes(in_axes: Any, count: int) -> tuple:
    """pmap's in_axes as one int or None per argument, or a ValueError with the fix."""
    axes = tuple(in_axes) if isinstance(in_axes, (tuple, list)) else (in_axes,) * count
    if len(axes) != count or any(
        not (a is None or (isinstance(a, int) and not isinstance(a, bool))) for a in axes
    ):
        raise ValueError(
            f"in_axes={in_axes!r} does not give one int or None for each of the {count} "
            "argument(s). Fix: in_axes=0 (every argument split along its first axis), or a "
            "tuple with one int or None per argument, e.g. (0, None)."
        )
    return axes


def mapped_size(structs: list, axes: tuple) -> int:
    """The device count: the one size every mapped axis has (ValueError with the fix)."""
    import jax

    sizes = []
    for k, (tree, ax) in enumerate(zip(structs, axes, strict=True)):
        for leaf in jax.tree.leaves(tree) if ax is not None else []:
            if not -leaf.ndim <= ax < leaf.ndim:
                raise ValueError(
                    f"argument {k} has shape {fmt_shape(leaf.shape)}, which has no axis {ax} "
                    f"to split over devices. Fix: in_axes with an axis below {leaf.ndim} for "
                    "it, or None to give it whole to every device."
                )
            sizes.append((k, leaf.shape, leaf.shape[ax]))
    if not sizes:
        raise ValueError(
            "no argument is split over devices (every in_axes is None). Fix: split at "
            "least one argument, e.g. in_axes=0."
        )
    if len({s for _, _, s in sizes}) > 1:
        said = ", ".join(f"argument {k} {fmt_shape(shape)}: {s}" for k, shape, s in sizes)
        raise ValueError(
            f"the mapped axes differ ({said}); pmap gives entry d of every mapped axis to "
            "device d, so they must all have the same size. Fix: make them equal (that size "
            "is the device count)."
        )
    return sizes[0][2]
