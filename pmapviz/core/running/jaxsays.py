"""What JAX itself says about a pmap call: its own exception, verbatim, read from a real call.

pmapviz explains a call JAX refuses in the user's own shapes (:mod:`pmapviz.core.planning`); a
learner meets JAX's words in their own code, so the pages show those too, after the explanation.
:func:`ask` lowers the real ``jax.pmap`` of a plan's program, with the arguments, in_axes,
out_axes and axis_name exactly as given (not as the planner normalised them), on
``jax.ShapeDtypeStruct`` inputs: it raises the exception the real call raises (the tests check
each against the call itself) and allocates nothing. :func:`jax_says` keeps the answer per plan
and bounds the time a lowering (a trace) may take; where the plan is for more devices than this
process has, JAX cannot be asked, and the answer says why.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import pytrees
from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running.pmapcompile import forget_pmap, own_function

LIMIT_S = 5.0  # the longest a page waits for one lowering (they take ~5-30 ms)
KEPT = 256  # answers kept, the most recent (a few hundred bytes each)
MAX_ASKING = 4  # lowerings still running past their time at once; beyond, JAX is not asked


@dataclass(frozen=True)
class JaxSaid:
    """JAX's exception for a pmap call, as Python prints its last line (``error_type: message``);
    or, with ``not_asked``, why JAX could not be asked (then the other two are empty)."""

    error_type: str  # as a traceback names it: ValueError, jax._src.sharding.IndivisibleError
    message: str  # str(exception), verbatim
    not_asked: str = ""

    @property
    def asked(self) -> bool:
        """Whether JAX was asked (and so refused: an accepted call has no JaxSaid)."""
        return not self.not_asked

    @property
    def name(self) -> str:
        """The exception's own name, without its module: IndivisibleError."""
        return self.error_type.rpartition(".")[2]

    @property
    def text(self) -> str:
        """The exception as a traceback's last line says it: its full name, then the message
        ("" when JAX was not asked)."""
        if not self.asked:
            return ""
        return f"{self.error_type}: {self.message}" if self.message else self.error_type


def said(err: BaseException) -> JaxSaid:
    """An exception as a :class:`JaxSaid`, named as a traceback names it."""
    kind = type(err)
    module = kind.__module__
    name = (
        kind.__qualname__ if module in ("builtins", "__main__") else f"{module}.{kind.__qualname__}"
    )
    return JaxSaid(name, str(err))


def _specs(tree: Any, dtype: Any) -> Any:
    """A tree of shapes (an argument as given) as the same tree of ShapeDtypeStructs."""
    import jax

    if pytrees.is_shape(tree):
        return jax.ShapeDtypeStruct(tuple(tree), dtype)
    if isinstance(tree, dict):
        return {k: _specs(v, dtype) for k, v in tree.items()}
    if tree is None:
        return None
    return tuple(_specs(v, dtype) for v in tree)


def ask(program: Program, plan: Plan, devices: list) -> JaxSaid | None:
    """Lower ``jax.pmap(f, in_axes, out_axes, axis_name, devices)`` with the plan's settings as
    given, on abstract inputs: None when JAX accepts the call, else its exception (never
    raised). ``devices``: the first ``plan.n_devices`` devices of this process."""
    import jax
    import jax.numpy as jnp

    fn = own_function(program.build(plan.axis_name))  # JAX's memo of it ends with it
    try:
        args = [_specs(a.shape_tree, jnp.dtype(a.dtype)) for a in plan.arguments]
        jax.pmap(
            fn,
            in_axes=tuple(plan.in_axes_given),
            out_axes=plan.out_axes,
            axis_name=plan.axis_name,
            devices=list(devices),
        ).lower(*args)
    except Exception as err:  # noqa: BLE001 -- JAX's refusal is the answer, never a traceback
        return said(err)
    finally:
        forget_pmap(fn)
    return None


# ---------------------------------------------------------------- kept, with a time bound
_LOCK = threading.Lock()
_KEPT: OrderedDict[tuple, JaxSaid | None] = OrderedDict()
_ASKING: dict[tuple, threading.Thread] = {}
_MISSING = object()


def _ask_and_keep(key: tuple, program: Program, plan: Plan, devices: list) -> None:
    """:func:`ask`, its answer kept under ``key`` (in its own thread)."""
    try:
        answer = ask(program, plan, devices)
        with _LOCK:
            _KEPT[key] = answer
            _KEPT.move_to_end(key)
            while len(_KEPT) > KEPT:
                _KEPT.popitem(last=False)
    finally:
        with _LOCK:
            _ASKING.pop(key, None)


def _kept(key: tuple) -> Any:
    with _LOCK:
        answer = _KEPT.get(key, _MISSING)
        if answer is not _MISSING:
            _KEPT.move_to_end(key)
        return answer


def jax_says(program: Program, plan: Plan, limit_s: float = LIMIT_S) -> JaxSaid | None:
    """What JAX itself says about the plan's pmap call on this process's devices (:func:`ask`),
    kept per program, plan and devices: None when JAX accepts it. Not asked (``not_asked``
    says why) when the plan is for more devices than this process has, or when the lowering
    takes longer than ``limit_s`` (it goes on in the background, and a later call reads its
    answer)."""
    devices = devicefacts.local_devices_for_work()
    n = plan.n_devices
    if n > len(devices):
        return JaxSaid(
            "",
            "",
            f"JAX's own words need the devices: this plan is for {n:,} devices and this "
            f"server has {len(devices):,}, so JAX cannot be asked here.",
        )
    used = list(devices[:n])
    key = (program, plan.key, tuple(d.id for d in used))
    answer = _kept(key)
    if answer is not _MISSING:
        return answer
    with _LOCK:
        thread = _ASKING.get(key)
        if thread is None and len(_ASKING) < MAX_ASKING:
            thread = threading.Thread(
                target=_ask_and_keep,
                args=(key, program, plan, used),
                name="pmapviz-jax-says",
                # not a daemon: a daemon thread still inside jaxlib's C++ when the interpreter
                # finalizes is unwound by force, and the process aborts ("FATAL: exception not
                # rethrown": the doctor's exit, once). Python waits for it; a server's stop
                # does not (stopping.end_everything_at_exit)
                daemon=False,
            )
            _ASKING[key] = thread
            thread.start()
    if thread is None:
        return JaxSaid(
            "",
            "",
            f"JAX is still tracing {MAX_ASKING} other slow calls, so it is not asked about "
            "this one now; pmapviz's explanation above stands.",
        )
    thread.join(limit_s)
    answer = _kept(key)
    if answer is not _MISSING:
        return answer
    return JaxSaid(
        "",
        "",
        f"JAX took longer than {limit_s:g} s to trace this call, so its own words are not "
        "shown yet; pmapviz's explanation above stands.",
    )
