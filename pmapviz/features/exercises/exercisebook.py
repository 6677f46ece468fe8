"""The exercises: each a record a page carries (the tour's steps carry these six), with a task
in this server's numbers, the settings an attempt is typed in (read through the settings layer,
never evaluated), a check pmapviz already knows how to judge, a hint and a worked answer.

:data:`EXERCISES` in the tour's order; :func:`on_step` finds a page's; :func:`judge` parses
an attempt and checks it. The checks live in :mod:`pmapviz.features.exercises.planchecks`,
:mod:`pmapviz.features.exercises.runchecks` and
:mod:`pmapviz.features.exercises.programchecks`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pmapviz.core.base import settings, valueparse
from pmapviz.core.expressions import expr
from pmapviz.core.expressions.collectivedefs import COLLECTIVES
from pmapviz.features.exercises import planchecks, programchecks, runchecks, verdicts
from pmapviz.features.exercises.verdicts import Judgement
from pmapviz.features.meshes import meshspecs

MAX_ATTEMPT = 500  # characters of one attempt's setting
ANSWER_KEY = "answer"  # a step's link shows this exercise's worked answer: ?step=4&answer=...


@dataclass(frozen=True)
class Exercise:
    """One exercise: where it sits (a page's URL path and tour step), its task, the settings
    an attempt is typed in, its check, a hint and the worked answer; every text for ``n``
    devices."""

    key: str
    step: int  # the tour step that carries it
    title: str
    task: Callable[[int], str]  # markdown, in this server's numbers
    fields: tuple[settings.Field, ...]  # the attempt's settings (their defaults unused)
    start: Callable[[int], dict[str, str]]  # what the attempt's boxes hold first
    check: Callable[[Mapping[str, Any], int], Judgement]
    hint: Callable[[int], str]
    answer: Callable[[int], dict[str, str]]  # the worked answer, as it is typed
    why: Callable[[int], str]  # the worked answer's explanation
    page: str = "tour"
    choices: tuple[tuple[str, tuple[str, ...]], ...] = ()  # a setting picked from a list
    min_devices: int = 1  # fewer devices: the exercise does not exist (missing() says so)

    def missing(self, n: int) -> str | None:
        """Why this exercise cannot be tried on ``n`` devices, in one line (None: it can)."""
        if n >= self.min_devices:
            return None
        return (
            f"This exercise needs at least {self.min_devices} devices, and this server has "
            f"{n}. Start pmapviz with --devices {max(8, self.min_devices)} (emulated CPU "
            "devices) to try it; its hint and worked answer read as they would there."
        )

    def options(self, key: str) -> tuple[str, ...] | None:
        """The list setting ``key`` is picked from (None: it is typed)."""
        return dict(self.choices).get(key)

    @property
    def query(self) -> dict[str, str]:
        """The link of the step that carries it."""
        return {"step": str(self.step)}

    def schema(self) -> settings.Schema:
        """The attempt's settings, as one schema."""
        return settings.Schema(self.fields)


def _text(key: str, label: str, parse: Callable[[str, str], Any] | None) -> settings.Field:
    return settings.text_field(key, label, "", parse, max_len=MAX_ATTEMPT, typed=True)


def _f_of(names: str) -> Callable[[str, str], Any]:
    return lambda text, name: expr.program(names, text)


def _shape(text: str, name: str):
    return valueparse.parse_shape(text, name)


def _largest_divisor(rows: int, n: int) -> int:
    return max(d for d in range(1, min(rows, n) + 1) if rows % d == 0)


def _devices(n: int) -> str:
    """'8 devices', '1 device'."""
    return "1 device" if n == 1 else f"{n} devices"


def _the(n: int) -> str:
    """'the 8 devices', 'the one device'."""
    return "the one device" if n == 1 else f"the {n} devices"


def _each(n: int) -> str:
    """'Each of the 8 devices', 'The one device'."""
    return "The one device" if n == 1 else f"Each of the {n} devices"


def _fit_why(n: int) -> str:
    shape, d = _fit_answer(n)["shape"], _largest_divisor(planchecks.rows_of(n), n)
    if n == 1:
        return f"{shape} keeps every element and puts all of x on the one device."
    if d == n:
        return f"{shape} keeps every element and gives each of {_the(n)} one block."
    return (
        f"{shape} keeps every element and uses {d} of {_the(n)}. To keep all {n} busy, pad x "
        f"to a multiple of {n} rows first (this step's note)."
    )


def _fit_answer(n: int) -> dict[str, str]:
    rows = planchecks.rows_of(n)
    d = _largest_divisor(rows, n)
    return {"shape": f"{d}, {rows // d}, 3"}


EXERCISES: tuple[Exercise, ...] = (
    Exercise(
        "dot-pairs",
        3,
        "one dot product per pair",
        lambda n: (
            f"x and y hold {runchecks.PAIRS * n} pairs of 3-vectors as ({n}, {runchecks.PAIRS}, "
            f"3): {runchecks.PAIRS} pairs per device, on {_the(n)}. Write `f(x, y)` so that "
            "`jax.pmap(f)`'s output, reshaped, equals `jax.jit(jax.vmap(jnp.dot))` of the "
            "pairs. It runs for real on this server's devices."
        ),
        (_text("body", "f(x, y) =", _f_of("x, y")),),
        lambda n: {"body": "jnp.vdot(x, y)"},
        runchecks.dot_pairs,
        lambda n: (
            f"Inside pmap each device's f sees a ({runchecks.PAIRS}, 3) block: "
            f"{runchecks.PAIRS} pairs. `jnp.vdot` flattens both and returns one number; which "
            "function gives one number per pair?"
        ),
        lambda n: {"body": "jax.vmap(jnp.dot)(x, y)"},
        lambda n: (
            f"`jax.vmap(jnp.dot)` maps `jnp.dot` over the {runchecks.PAIRS} pairs of each "
            f"device's block: pmap's output is ({n}, {runchecks.PAIRS}), which reshapes to "
            f"`jit(vmap(dot))`'s ({runchecks.PAIRS * n},). `jnp.sum(x * y, axis=-1)` is the "
            "same."
        ),
    ),
    Exercise(
        "fit-devices",
        4,
        "fit the mapped axis to the devices",
        lambda n: (
            f"x has shape ({planchecks.rows_of(n)}, 3): {planchecks.rows_of(n)} rows and "
            f"{_devices(n)}. Type a shape for x that keeps all {planchecks.rows_of(n) * 3} "
            f"elements and that `jax.pmap(lambda x: x * 2)` takes on {_devices(n)}."
        ),
        (_text("shape", "shape of x", _shape),),
        lambda n: {"shape": f"{planchecks.rows_of(n)}, 3"},
        planchecks.fit_devices,
        lambda n: (
            f"pmap maps the first axis, and it may not be longer than the device count, {n}. "
            "Reshape x so its first axis divides the rows."
        ),
        _fit_answer,
        _fit_why,
    ),
    Exercise(
        "broadcast-w",
        5,
        "give every device all of w",
        lambda n: (
            f"f(x, w) = `x @ w`, x of shape ({n}, 4, 5) mapped over its first axis (in_axes 0), "
            "w of shape (5, 2). Type w's in_axes so that every device multiplies its x block "
            f"by all of w: the result ({n}, 4, 2)."
        ),
        (_text("axis", "in_axes of w", lambda t, name: valueparse.parse_axis(t, name)),),
        lambda n: {"axis": "0"},
        planchecks.broadcast_w,
        lambda n: "Which in_axes entry means 'not split: every device gets all of it'?",
        lambda n: {"axis": "None"},
        lambda n: (
            "`in_axes=(0, None)`: x is split over the devices, w is broadcast, so each device "
            f"computes its (4, 5) @ (5, 2) and pmap stacks them into ({n}, 4, 2)."
        ),
    ),
    Exercise(
        "ring-shift",
        6,
        "pass each value to the right",
        lambda n: (
            f"Each of the {n} devices holds one number, x = 1, 2, ... Choose the collective "
            "(and, for ppermute, its pairs: ring right, ring left, or pairs like 0->1) so that "
            f"every device ends with its left neighbour's x (device 0 with device {n - 1}'s)."
        ),
        (
            settings.choice_field("c", "Collective", tuple(c.key for c in COLLECTIVES), "psum"),
            settings.text_field("perm", "Pairs (ppermute)", "", max_len=MAX_ATTEMPT),
        ),
        lambda n: {"c": "psum", "perm": ""},
        runchecks.ring_shift,
        lambda n: (
            "No device's value is combined with another's: each one is sent somewhere. Which "
            "collective sends each block to one other device?"
        ),
        lambda n: {"c": "ppermute", "perm": "ring right"},
        lambda n: (
            "`lax.ppermute(x, 'i', perm=[(j, (j + 1) % n) ...])`: device j sends its x to "
            "j + 1, so each device receives its left neighbour's. One collective-permute, "
            "each device sending one block."
        ),
        choices=(("c", tuple(c.key for c in COLLECTIVES)),),
        min_devices=2,  # on one device every value is its own left neighbour's
    ),
    Exercise(
        "replicas-agree",
        7,
        "make the replicas agree",
        lambda n: (
            f"{_each(n)} computed its own gradient g, shape (3,) (g is "
            f"({n}, 3) in all). Write `f(g)` whose compiled program holds exactly one "
            "all-reduce, so every replica applies the same update (the mean of the gradients)."
        ),
        (_text("body", "f(g) =", _f_of("g")),),
        lambda n: {"body": f"g / {n}"},
        programchecks.replicas_agree,
        lambda n: "The devices must talk: which collective averages over the axis 'i'?",
        lambda n: {"body": "lax.pmean(g, 'i')"},
        lambda n: (
            "`lax.pmean(g, 'i')` is one all-reduce over the devices, divided by their "
            f"count: {_each(n).lower()} holds the mean of every replica's g, so the replicas "
            "stay identical."
        ),
    ),
    Exercise(
        "block-spec",
        10,
        "a PartitionSpec for a given block",
        lambda n: (
            f"On a mesh of {_the(n)} with one axis 'i', x has shape (4, {2 * n}). Type "
            "the PartitionSpec that gives each device a (4, 2) block."
        ),
        (_text("spec", "PartitionSpec", lambda t, name: meshspecs.parse_spec(t, name)),),
        lambda n: {"spec": "P('i', 'i')"},
        programchecks.block_spec,
        lambda n: (
            "Each entry of a PartitionSpec names the mesh axis that splits that dimension of "
            "x, or None to keep it whole. Which dimension must be split?"
        ),
        lambda n: {"spec": "P(None, 'i')"},
        lambda n: (
            f"`P(None, 'i')` keeps dimension 0 (4) whole and splits dimension 1 ({2 * n}) over "
            f"{_the(n)}: each holds (4, 2)."
        ),
    ),
)
BY_KEY = {e.key: e for e in EXERCISES}


def answer_field() -> settings.Field:
    """The link's ``answer=``: the exercise whose worked answer its step shows (none: "")."""
    return settings.choice_field(ANSWER_KEY, "Worked answer shown", ("", *BY_KEY), "")


def on_step(page: str, query: Mapping[str, Any]) -> list[Exercise]:
    """The exercises a page's step carries (the tour's: by its step)."""
    step = str(query.get("step", "1")).strip()
    return [e for e in EXERCISES if e.page == page and e.query["step"] == step]


def parse(exercise: Exercise, texts: Mapping[str, Any]) -> tuple[dict | None, Judgement | None]:
    """An attempt's typed values, or the judgement on a setting that does not parse (the first;
    its label names it, none of its text)."""
    values = {}
    for f in exercise.fields:
        try:
            values[f.key] = f.parse(str(texts.get(f.key, "")), f.label)
        except (valueparse.SettingError, ValueError) as err:
            return None, verdicts.unreadable(err, f.label.rstrip(" =").rstrip())
    return values, None


def judge(exercise: Exercise, texts: Mapping[str, Any], n: int) -> Judgement:
    """An attempt parsed through the exercise's settings, then checked on ``n`` devices (not
    checked where the exercise needs more devices than ``n``)."""
    if (missing := exercise.missing(n)) is not None:
        return verdicts.not_checked(missing)
    values, refused = parse(exercise, texts)
    if refused is not None:
        return refused
    return exercise.check(values, n)
