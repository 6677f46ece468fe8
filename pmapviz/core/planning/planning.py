"""Planning and validation: what ``jax.pmap`` will do with given shapes, before anything runs.

:func:`plan` works from abstract shapes only (``jax.ShapeDtypeStruct`` + ``jax.eval_shape``), so
planning a (10_000_000, 3) input allocates nothing. The per-device program is traced with
``jax.vmap(f, axis_name=...)``, which has pmap's shape semantics (and binds the same collectives)
without needing the devices; the rules pmap adds on top (mapped axis <= device count, no negative
axes, out_axes=None only for outputs equal on every device) are checked, with a message in the
user's own shapes and a fix. ``tests/core/planning/test_planning.py`` proves the result against real
``jax.pmap``.

First normalise, then check with pure rules:

* :func:`pmapviz.core.planning.planfacts.normalise` is the one step that works things out: f's
arguments
  flattened into leaves with normalised axes and the mapped size (a frozen
  :class:`pmapviz.core.planning.planfacts.Normalised`);
* each check is a small named rule (``rule_*``) that only reads it and returns a
  :class:`pmapviz.core.planning.planfacts.Problem`, several, or nothing, in the user's own names,
  shapes and numbers (:mod:`pmapviz.core.planning.planinputrules`);
* :func:`pmapviz.core.planning.planoutputrules.infer_output` traces f on the per-device blocks (and
spreads
  out_axes over f's output), for the rules on the output
  (:mod:`pmapviz.core.planning.planoutputrules`);
* :func:`plan` runs them in order and returns a :class:`Plan`, here.

Parsing what a user types lives in :mod:`pmapviz.core.base.valueparse` (and the pages' schemas in
:mod:`pmapviz.core.base.settings`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pmapviz.core.base import pytrees
from pmapviz.core.planning.planfacts import Argument, Leaf, Normalised, Problem, as_list, normalise
from pmapviz.core.planning.planinputrules import AXES_CHECKED, INPUT_RULES, LAYOUT_CHECKED
from pmapviz.core.planning.planoutputrules import (
    OUTPUT_RULES,
    infer_output,
    rule_out_axes_structure,
)


# ---------------------------------------------------------------- the plan
@dataclass(frozen=True)
class Plan:
    """What ``jax.pmap`` does with these settings: ``ok``, or the ``problems`` it would hit.

    ``arguments`` are f's arguments as given; ``leaves`` are the arrays pmap maps, in JAX's order
    (one per plain argument, one per leaf of a dict / tuple argument). A plan that stops at a
    problem reports what the checks before it established: ``leaves`` is empty when the in_axes do
    not fit the arguments, a leaf's ``axis`` is None until the axes are checked, and
    ``devices_used`` and each leaf's ``local_shape`` are known once the mapped axes agree and fit
    the devices.
    """

    ok: bool
    problems: tuple[Problem, ...]
    n_devices: int
    devices_used: int
    arguments: tuple[Argument, ...]
    leaves: tuple[Leaf, ...]
    in_axes_given: tuple  # per argument as typed (for shown code), even when the count is wrong
    out_axes: Any  # as given: an axis, or a prefix of f's output
    axis_name: str | None
    out_shapes: Any = None  # tuple, or a pytree of tuples
    per_device_out_shapes: Any = None
    out_dtypes: Any = None
    out_varies: bool | None = None  # does the output differ from device to device?
    out_leaf_axes: tuple = ()  # per output leaf: its out_axes (out_axes may be a prefix)
    notes: tuple[str, ...] = ()

    @property
    def leaf_axes(self) -> tuple[int | None, ...]:
        """Per leaf, its normalised in_axes: what ``jax.pmap`` / ``jax.vmap`` of
        :meth:`leaf_fn` take."""
        return tuple(leaf.axis for leaf in self.leaves)

    @property
    def has_trees(self) -> bool:
        """Is any argument a dict or tuple of arrays?"""
        return any(a.is_tree for a in self.arguments)

    @property
    def skeletons(self) -> tuple:
        """Per argument: its structure (:func:`pmapviz.core.base.pytrees.skeleton`)."""
        return tuple(a.skeleton for a in self.arguments)

    @property
    def key(self) -> tuple:
        """The settings as given, hashable (a cache key): argument trees, one dtype per
        argument, in_axes and out_axes as given, axis name, device count. :func:`replan`
        turns it back into this plan."""
        trees = tuple(a.shape_tree for a in self.arguments)
        return (
            pytrees.freeze(trees),
            tuple(a.dtype for a in self.arguments),
            pytrees.freeze(self.in_axes_given),
            pytrees.freeze(self.out_axes),
            self.axis_name,
            self.n_devices,
        )

    def leaf_fn(self, fn: Callable) -> Callable:
        """``fn`` taking one array per leaf (``fn`` itself when no argument is a tree)."""
        if not self.has_trees:
            return fn
        return pytrees.flat_function(fn, self.skeletons)

    def leaf_rows(self) -> list[tuple[str, Any, int | None]]:
        """``(name, shape, normalised axis)`` per leaf; per argument (its shape as given, no
        axis) when its in_axes could not be spread over the arguments."""
        if self.leaves:
            return [(leaf.name, leaf.shape, leaf.axis) for leaf in self.leaves]
        return [(a.name, a.shape_tree, None) for a in self.arguments]

    def to_json(self) -> str:
        """The plan as JSON text: what ``python -m pmapviz plan --json`` prints."""
        rows = self.leaf_rows()
        blocks = [leaf.local_shape for leaf in self.leaves if leaf.local_shape is not None]
        data = {
            "ok": self.ok,
            "problems": [
                {"code": q.code, "message": q.message, "fix": q.fix} for q in self.problems
            ],
            "devices_used": self.devices_used,
            "n_devices": self.n_devices,
            "arg_names": [name for name, _, _ in rows],  # per leaf: x, params['b'], ...
            "arguments": [
                {"name": a.name, "shape": a.shape_tree, "in_axes": a.in_axes}
                for a in self.arguments
            ],
            "arg_shapes": [list(shape) for _, shape, _ in rows],
            "in_axes": [axis for _, _, axis in rows],
            "out_axes": self.out_axes,
            "axis_name": self.axis_name,
            "per_device_in_shapes": [list(s) for s in blocks],
            "out_shapes": self.out_shapes,
            "per_device_out_shapes": self.per_device_out_shapes,
            "out_dtypes": self.out_dtypes,
            "notes": list(self.notes),
        }
        return json.dumps(data, indent=2)


# ---------------------------------------------------------------- plan()
def replan(fn: Callable, key: tuple) -> Plan:
    """The plan of ``fn`` for a :attr:`Plan.key` (how caches rebuild a plan from its key)."""
    trees, dtypes, in_axes, out_axes, axis_name, n = key
    thaw = pytrees.thaw
    return plan(
        fn,
        list(thaw(trees)),
        in_axes=thaw(in_axes),
        out_axes=thaw(out_axes),
        axis_name=axis_name,
        n_devices=n,
        dtypes=dtypes,
    )


def plan(
    fn: Callable,
    arg_shapes: Sequence[Sequence[int]],
    in_axes: int | None | Sequence[int | None] = 0,
    out_axes: int | None = 0,
    axis_name: str | None = None,
    n_devices: int | None = None,
    dtypes: str | Sequence[str] | None = None,
) -> Plan:
    """What ``jax.pmap(fn, in_axes, out_axes, axis_name)`` does with arguments of these shapes.

    ``fn`` is a callable or a :class:`pmapviz.core.expressions.functions.Program`. ``n_devices``
    defaults to the local device count and may be larger (planning for a bigger machine). Never
    raises for bad shapes or axes: they become ``problems``, each with a ``fix``. First
    :func:`normalise`, then the rules in order (:data:`INPUT_RULES`, :func:`infer_output`,
    :data:`OUTPUT_RULES`).
    """
    n = normalise(fn, arg_shapes, in_axes, out_axes, axis_name, n_devices, dtypes)
    for stop, rule in enumerate(INPUT_RULES):
        problems = as_list(rule(n))
        if problems:
            return _finish(n, problems, stop)
    traced = infer_output(n)
    if isinstance(traced, Problem):
        return _finish(n, [traced], len(INPUT_RULES))
    n = replace(n, output=traced)
    problems = as_list(rule_out_axes_structure(n))
    if not problems:
        problems = [q for rule in OUTPUT_RULES for q in as_list(rule(n))]
    return _finish(n, problems, len(INPUT_RULES))


def _reported_leaves(n: Normalised, stop: int) -> tuple[Leaf, ...]:
    """The leaves as far as the checks got before ``stop`` (see :class:`Plan`)."""
    return tuple(
        replace(
            leaf,
            axis=leaf.axis if stop >= AXES_CHECKED else None,
            local_shape=leaf.local_shape if stop >= LAYOUT_CHECKED else None,
        )
        for leaf in n.leaves
    )


def _output_fields(n: Normalised, problems: list[Problem]) -> dict[str, Any]:
    """The Plan's output fields once f is traced with out_axes that fit."""
    out = n.output
    if not n.traced:
        return {"out_varies": None if out is None else out.varies}
    size = n.size or 0
    bad = any(
        q.code in ("negative_out_axes", "out_axes_out_of_range", "output_too_large")
        for q in problems
    )
    stacked = [
        o.shape if o.axis is None else o.shape[: o.axis] + (size,) + o.shape[o.axis :]
        for o in out.leaves
    ]
    return {
        "out_shapes": None if bad else out.treedef.unflatten(stacked),
        "per_device_out_shapes": out.treedef.unflatten([o.shape for o in out.leaves]),
        "out_dtypes": out.treedef.unflatten([o.dtype for o in out.leaves]),
        "out_varies": out.varies,
        "out_leaf_axes": tuple(o.axis for o in out.leaves),
    }


def _finish(n: Normalised, problems: list[Problem], stop: int) -> Plan:
    """The plan of ``n`` with ``problems`` found, the checks having stopped at input rule
    ``stop`` (``len(INPUT_RULES)``: every input rule passed)."""
    notes = []
    size = n.size or 0
    if n.traced and size < n.n_devices:
        notes.append(
            f"The mapped axis has {size} element(s), so pmap uses the first {size} of the "
            f"{n.n_devices} devices; the other {n.n_devices - size} stay idle."
        )
    return Plan(
        ok=not problems,
        problems=tuple(problems),
        n_devices=n.n_devices,
        devices_used=size if stop >= LAYOUT_CHECKED else 0,
        arguments=n.arguments,
        leaves=_reported_leaves(n, stop),
        in_axes_given=n.in_axes_given,
        out_axes=n.out_axes,
        axis_name=n.axis_name,
        notes=tuple(notes),
        **_output_fields(n, problems),
    )
