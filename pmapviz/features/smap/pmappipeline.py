"""The pipeline JAX 0.10 makes of a pmap, read from its jaxpr: ``jit`` -> ``shard_map`` (its
in_specs, out_specs and mesh) -> ``squeeze`` of each mapped block -> f's equations ->
``broadcast_in_dim`` putting the mapped axis back.

Nothing here is written from the settings: :func:`pmap_pipeline` traces
``jax.make_jaxpr(jax.pmap(f, in_axes, out_axes, axis_name, devices))`` on abstract inputs
(``jax.ShapeDtypeStruct``, the arguments exactly as given, so nothing is allocated) and
:func:`read` walks the equations JAX made: each stage's primitive, the parameters that matter
and every type as JAX prints it (``aval.str_short``: ``f32[1,4]``, ``f32[8@i,3]``,
``f32[1,3]{V:i}``). Where JAX refuses the call, the pipeline holds its words instead
(:class:`pmapviz.core.running.jaxsays.JaxSaid`). The same reader draws smap's own trace
(:mod:`pmapviz.features.smap.smapcall`): ``reshard`` -> ``shard_map`` -> f.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import pytrees
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running.jaxsays import JaxSaid, said
from pmapviz.core.running.pmapcompile import forget_pmap, own_function

# the parameters shown per primitive (the rest of an equation's params are in the jaxpr text)
SHOWN_PARAMS = {
    "jit": ("name",),
    "pjit": ("name",),
    "shard_map": ("in_specs", "out_specs", "mesh", "check_vma"),
    "squeeze": ("dimensions",),
    "broadcast_in_dim": ("shape", "broadcast_dimensions"),
    "reshard": ("dst_sharding",),
}
PARAM_TEXT = 160  # characters of one parameter of one of f's equations (JAX's text is in full)
KEPT = 64  # pipelines kept, the most recent


@dataclass(frozen=True)
class Equation:
    """One equation as JAX made it: its primitive, the parameters shown (as JAX prints them),
    its operands' and results' types, and the arrays it is about (pmap's own steps)."""

    primitive: str
    params: tuple[tuple[str, str], ...]
    in_types: tuple[str, ...]
    out_types: tuple[str, ...]
    names: tuple[str, ...] = ()  # x, params['b'], out[0]: the leaves a squeeze or put-back is for


@dataclass(frozen=True)
class Stage:
    """One box of the pipeline: ``kind`` (jit, reshard, shard_map, squeeze, f,
    broadcast_in_dim, other) and its equations."""

    kind: str
    equations: tuple[Equation, ...]

    @property
    def primitive(self) -> str:
        """The primitive its equations bind (f's stage: ``f``)."""
        return "f" if self.kind == "f" else self.equations[0].primitive


@dataclass(frozen=True)
class Pipeline:
    """A call as JAX traced it: ``stages`` in order, the jaxpr as JAX prints it; or, with
    ``refused``, JAX's own refusal of the call (no stages)."""

    api: str  # "pmap" or "smap"
    stages: tuple[Stage, ...] = ()
    jaxpr: str = ""
    refused: JaxSaid | None = None
    outputs: tuple[tuple[str, tuple[int, ...], str], ...] = ()  # (name, shape, dtype) per leaf

    @property
    def kinds(self) -> tuple[str, ...]:
        """The stages' kinds in order: ('jit', 'shard_map', 'squeeze', 'f', 'broadcast_in_dim')."""
        return tuple(s.kind for s in self.stages)

    def stage(self, kind: str) -> Stage | None:
        """The first stage of ``kind``, or None."""
        return next((s for s in self.stages if s.kind == kind), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain data: each stage with its equations, and the refusal."""
        return {
            "api": self.api,
            "stages": [
                {
                    "kind": s.kind,
                    "equations": [
                        {
                            "primitive": e.primitive,
                            "params": dict(e.params),
                            "in_types": list(e.in_types),
                            "out_types": list(e.out_types),
                            "names": list(e.names),
                        }
                        for e in s.equations
                    ],
                }
                for s in self.stages
            ],
            "refused": None if self.refused is None else self.refused.text,
            "outputs": [
                {"name": n, "shape": list(shape), "dtype": dt} for n, shape, dt in self.outputs
            ],
        }


# ---------------------------------------------------------------- reading a jaxpr
def type_of(var: Any) -> str:
    """A variable's type as JAX prints it in a jaxpr: ``f32[8@i,3]``, ``f32[1,3]{V:i}``."""
    return var.aval.str_short(short_dtypes=True)


def _params(eqn: Any, everything: bool) -> tuple[tuple[str, str], ...]:
    keys = SHOWN_PARAMS.get(eqn.primitive.name)
    if keys is None and not everything:
        return ()
    chosen = keys if keys is not None else sorted(k for k in eqn.params if "jaxpr" not in k)
    return tuple(
        (k, str(eqn.params[k]) if keys is not None else str(eqn.params[k])[:PARAM_TEXT])
        for k in chosen
        if k in eqn.params
    )


def equation(eqn: Any, names: Sequence[str] = (), everything: bool = True) -> Equation:
    """One jaxpr equation as an :class:`Equation`."""
    return Equation(
        eqn.primitive.name,
        _params(eqn, everything),
        tuple(type_of(v) for v in eqn.invars),
        tuple(type_of(v) for v in eqn.outvars),
        tuple(names),
    )


def _body(eqn: Any) -> Any:
    """The jaxpr inside a jit or shard_map equation (a Jaxpr; jit holds a ClosedJaxpr)."""
    inner = eqn.params["jaxpr"]
    return getattr(inner, "jaxpr", inner)


def _mapped(specs: Any, k: int) -> bool:
    return k < len(specs) and any(entry is not None for entry in specs[k])


def _shard_map_stages(eqn: Any, in_names: list[str], out_names: list[str]) -> list[Stage]:
    """shard_map, then inside it: pmap's squeezes (of mapped inputs), f's equations, and the
    put-backs (broadcast_in_dim producing a mapped output)."""
    body = _body(eqn)
    ins, outs = eqn.params["in_specs"], eqn.params["out_specs"]
    invars = {v: k for k, v in enumerate(body.invars) if _mapped(ins, k)}
    outvars = {v: k for k, v in enumerate(body.outvars) if _mapped(outs, k)}
    squeezes, f_eqns, backs = [], [], []
    for e in body.eqns:
        src = e.invars[0] if e.invars else None
        if e.primitive.name == "squeeze" and src in invars:
            squeezes.append(equation(e, [_name(in_names, invars[src])]))
        elif e.primitive.name == "broadcast_in_dim" and e.outvars[0] in outvars:
            backs.append(equation(e, [_name(out_names, outvars[e.outvars[0]])]))
        else:
            f_eqns.append(equation(e))
    stages = [Stage("shard_map", (equation(eqn, everything=False),))]
    if squeezes:
        stages.append(Stage("squeeze", tuple(squeezes)))
    stages.append(Stage("f", tuple(f_eqns)))
    if backs:
        stages.append(Stage("broadcast_in_dim", tuple(backs)))
    return stages


def _name(names: list[str], k: int) -> str:
    return names[k] if k < len(names) else f"#{k}"


def read(closed: Any, in_names: list[str], out_names: list[str]) -> tuple[Stage, ...]:
    """The stages of a traced call: each jit (and what it holds), each reshard (grouped), the
    shard_map and its inside; any other top-level equation as a stage of its own."""
    stages: list[Stage] = []
    _walk(getattr(closed, "jaxpr", closed), in_names, out_names, stages)
    return tuple(stages)


def _walk(jaxpr: Any, in_names: list[str], out_names: list[str], stages: list[Stage]) -> None:
    position = {v: k for k, v in enumerate(jaxpr.invars)}
    for e in jaxpr.eqns:
        kind = e.primitive.name
        if kind in ("jit", "pjit"):
            stages.append(Stage("jit", (equation(e, everything=False),)))
            _walk(_body(e), in_names, out_names, stages)
        elif kind == "shard_map":
            stages.extend(_shard_map_stages(e, in_names, out_names))
        elif kind == "reshard":
            names = [_name(in_names, position[v]) for v in e.invars if v in position]
            one = equation(e, names, everything=False)
            if stages and stages[-1].kind == "reshard":
                stages[-1] = Stage("reshard", (*stages[-1].equations, one))
            else:
                stages.append(Stage("reshard", (one,)))
        else:
            stages.append(Stage("other", (equation(e),)))


# ---------------------------------------------------------------- names and abstract inputs
def leaf_names(arg_names: Sequence[str], args: Any) -> list[str]:
    """Each input leaf's name in JAX's order, as a user indexes it: x, params['b']."""
    import jax

    flat = jax.tree_util.tree_flatten_with_path(tuple(args))[0]
    return [arg_names[path[0].idx] + jax.tree_util.keystr(path[1:]) for path, _ in flat]


def out_leaf_names(out: Any) -> list[str]:
    """Each output leaf's name: out, out[0], out['s']."""
    import jax

    flat = jax.tree_util.tree_flatten_with_path(out)[0]
    return ["out" + jax.tree_util.keystr(path) for path, _ in flat]


def abstract_args(plan: Plan) -> list[Any]:
    """f's arguments as given (trees of ``jax.ShapeDtypeStruct``, no sharding): what a host
    array passed to the call is, to JAX's tracer."""
    import jax
    import jax.numpy as jnp

    def specs(tree: Any, dtype: Any) -> Any:
        if pytrees.is_shape(tree):
            return jax.ShapeDtypeStruct(tuple(tree), dtype)
        if isinstance(tree, dict):
            return {k: specs(v, dtype) for k, v in tree.items()}
        return tuple(specs(v, dtype) for v in tree)

    return [specs(a.shape_tree, jnp.dtype(a.dtype)) for a in plan.arguments]


def function_of(fn: Program | Callable, axis_name: str | None) -> Callable:
    """The per-device function: a catalog entry or your own f built for ``axis_name``, or a
    callable as it is."""
    return fn.build(axis_name) if isinstance(fn, Program) else fn


# ---------------------------------------------------------------- pmap's pipeline
def trace(api: str, call: Callable, args: list, names: list[str]) -> Pipeline:
    """``call(*args)`` traced by ``jax.make_jaxpr`` and read, or JAX's refusal of it."""
    import jax

    try:
        closed, shape = jax.make_jaxpr(call, return_shape=True)(*args)
    except Exception as err:  # noqa: BLE001 -- JAX's refusal is the answer, never a traceback
        return Pipeline(api, refused=said(err))
    outs = tuple(
        (name, tuple(leaf.shape), str(leaf.dtype))
        for name, leaf in zip(out_leaf_names(shape), jax.tree.leaves(shape), strict=True)
    )
    return Pipeline(api, read(closed, names, [o[0] for o in outs]), str(closed), None, outs)


def pmap_pipeline(fn: Program | Callable, plan: Plan) -> Pipeline:
    """What ``jax.pmap`` of ``fn`` with the plan's settings as given (in_axes, out_axes and
    axis_name exactly as typed, on the plan's first ``n_devices`` devices) becomes, read from
    its jaxpr on abstract inputs; or JAX's refusal, or why JAX cannot be asked here."""
    import jax

    devices = devicefacts.local_devices_for_work()
    if plan.n_devices > len(devices):
        return Pipeline("pmap", refused=not_here(plan.n_devices, len(devices)))
    f = own_function(function_of(fn, plan.axis_name))  # JAX's memo of it ends with it
    try:
        args = abstract_args(plan)
        pm = jax.pmap(
            f,
            in_axes=tuple(plan.in_axes_given),
            out_axes=plan.out_axes,
            axis_name=plan.axis_name,
            devices=list(devices[: plan.n_devices]),
        )
        return trace("pmap", pm, args, leaf_names([a.name for a in plan.arguments], args))
    finally:
        forget_pmap(f)


def not_here(n: int, have: int) -> JaxSaid:
    """Why JAX cannot be asked about a call for ``n`` devices on a process with ``have``."""
    return JaxSaid(
        "",
        "",
        f"JAX's own trace needs the devices: these settings are for {n:,} devices and this "
        f"process has {have:,}, so JAX cannot be asked here.",
    )


_LOCK = threading.Lock()
_KEPT: OrderedDict[tuple, Pipeline] = OrderedDict()


def pipeline_of(program: Program, plan: Plan) -> Pipeline:
    """:func:`pmap_pipeline`, kept per program, plan and devices (a trace takes ~10-50 ms)."""
    ids = tuple(d.id for d in devicefacts.local_devices_for_work()[: plan.n_devices])
    key = (program, plan.key, ids)
    with _LOCK:
        if key in _KEPT:
            _KEPT.move_to_end(key)
            return _KEPT[key]
    found = pmap_pipeline(program, plan)
    with _LOCK:
        _KEPT[key] = found
        while len(_KEPT) > KEPT:
            _KEPT.popitem(last=False)
    return found
