"""An attempt judged: solved, or what was wrong with it, in two registers.

For the attendee who tried: pmapviz's words about their attempt (which may quote it) and JAX's
own words for it, verbatim. For the room's count (:mod:`pmapviz.features.exercises.tally`): a
*kind*, JAX's error class and the rule the attempt broke, built from fixed words, the device
count and the exercise's own numbers only, so that no value an attendee typed ever reaches
another page (:func:`plan_verdict`'s rule names the mapped size only where it is the
exercise's own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pmapviz.core.base import valuetext
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning.planning import Plan
from pmapviz.core.running import jaxsays

WRONG = "WrongResult"  # JAX accepted the call; its result is not the task's
REFUSED = "Refused"  # pmapviz's rule refuses it where JAX could not be asked
# a kind holds these characters only: a class name, fixed words, numbers, an op's name
KIND = re.compile(r"[A-Za-z0-9_ (),.'>=+/:-]{1,160}\Z")


@dataclass(frozen=True)
class Judgement:
    """One attempt judged: ``solved``, or its ``error_type`` (JAX's exception class, or
    :data:`WRONG` where JAX accepted it) and ``rule`` (fixed words and the exercise's own
    numbers), with ``words`` (pmapviz's explanation) and ``said`` (JAX's own words) for the
    attendee alone. ``checked`` False: not judged now (``words`` say why); it counts nowhere."""

    solved: bool
    error_type: str = ""
    rule: str = ""
    words: str = ""
    said: str = ""
    checked: bool = True

    @property
    def kind(self) -> str:
        """What the room's count groups by: ``IndivisibleError (mapped axis 10 > 8 devices)``;
        "" when solved or not checked, or when it would hold anything but :data:`KIND`'s
        characters (it never should: it is built from fixed words)."""
        if self.solved or not self.checked:
            return ""
        text = f"{self.error_type} ({self.rule})" if self.rule else self.error_type
        return text if KIND.match(text) else "Error"


SOLVED = Judgement(True)


def wrong(error_type: str, rule: str, words: str = "", said: str = "") -> Judgement:
    """An attempt that is not the answer."""
    return Judgement(False, error_type, rule, words, said)


def not_checked(words: str) -> Judgement:
    """An attempt not judged now (too many at once, the server's memory busy)."""
    return Judgement(False, words=words, checked=False)


def unreadable(err: Exception, what: str) -> Judgement:
    """An attempt whose text does not parse: the parser's class (SettingError, ExprError) and
    which of the exercise's settings it was; the message, for the attendee."""
    return wrong(type(err).__name__, f"{what} not read", str(err))


# ---------------------------------------------------------------- a plan's verdict
PLAN_RULES = {  # the planner's problem codes (pmapviz.core.planning), as a rule's words
    "mapped_axis_too_large": "mapped axis > {devices}",
    "mapped_sizes_differ": "mapped axes of different sizes",
    "axis_out_of_range": "in_axes past an argument's rank",
    "negative_in_axes": "negative in_axes",
    "no_mapped_axis": "no argument mapped",
    "in_axes_length": "one in_axes entry per argument",
    "in_axes_structure": "in_axes not a prefix of the arguments",
    "mapped_axis_empty": "an empty mapped axis",
    "empty_block": "an empty block",
    "function_rejects_shapes": "f refuses each device's shapes",
    "unbound_axis_name": "a collective over an axis pmap does not name",
    "needs_axis_name": "a collective needs axis_name",
    "out_axes_none_varies": "out_axes=None on an output that varies",
    "out_axes_out_of_range": "out_axes past the output's rank",
    "negative_out_axes": "negative out_axes",
    "out_axes_structure": "out_axes not a prefix of the output",
    "too_large": "arrays too large",
    "output_too_large": "output too large",
    "dtype": "a dtype pmap does not take",
}


def plan_rule(plan: Plan, code: str, own_sizes: tuple[int, ...] = ()) -> str:
    """The rule a plan broke, in fixed words: a mapped axis longer than the devices names its
    size only when it is one of the exercise's ``own_sizes`` (the task's, never a typed one)."""
    n = plan.n_devices
    devices = f"{n} devices" if n != 1 else "1 device"
    if code == "mapped_axis_too_large":
        sizes = {leaf.shape[leaf.axis] for leaf in plan.leaves if leaf.axis is not None}
        own = sorted(s for s in sizes if s in own_sizes and s > n)
        if own:
            return f"mapped axis {own[0]} > {devices}"
    return PLAN_RULES.get(code, code.replace("_", " ")).format(devices=devices)


def plan_verdict(program: Program, plan: Plan, own_sizes: tuple[int, ...] = ()) -> Judgement:
    """A plan with problems: the first problem's rule and message, and JAX's own exception for
    the real call on these devices (:func:`pmapviz.core.running.jaxsays.jax_says`)."""
    q = plan.problems[0]
    said = jaxsays.jax_says(program, plan)
    if said is None:  # JAX accepts what pmapviz refuses (out_axes=None on a varying output)
        error_type, text = "NoErrorFromJAX", ""
    elif said.asked:
        error_type, text = said.name, said.text
    else:
        error_type, text = REFUSED, ""
    return wrong(error_type, plan_rule(plan, q.code, own_sizes), q.message, text)


def said_name(err: BaseException) -> str:
    """An exception's own class name, as :class:`pmapviz.core.running.jaxsays.JaxSaid` names it."""
    return jaxsays.said(err).name


def shape_words(shape: tuple[int, ...]) -> str:
    """A shape for an attendee's own words."""
    return valuetext.fmt_shape(shape)
