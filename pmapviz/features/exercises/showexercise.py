"""``pmapviz.exercise`` for a notebook: the tour's exercises on this process's devices, their
task, hint and worked answer, and an attempt judged by the same check the pages run (solved,
or what was wrong and JAX's own words). A notebook's attempts are judged, never counted: the
room's count is the server's."""

from __future__ import annotations

from typing import Any

from pmapviz.core.base.valuetext import quote
from pmapviz.core.devices import devicefacts
from pmapviz.core.drawing import notebookviews
from pmapviz.core.drawing.notebookviews import View
from pmapviz.features.exercises import exercisebook
from pmapviz.features.exercises.exercisebook import Exercise
from pmapviz.features.exercises.verdicts import Judgement


def exercise(key: str | None = None, answer: bool = False, **attempt: str) -> View:
    """The exercise ``key`` (e.g. ``"fit-devices"``; None: every exercise of the tour, where it
    sits) on this process's devices: its task and hint, with ``answer`` its worked answer. With
    ``attempt`` (its settings as typed: ``shape="5, 2, 3"``, ``body="jax.vmap(jnp.dot)(x, y)"``,
    ``c="ppermute", perm="ring right"``, ``axis="None"``, ``spec="P(None, 'i')"``), the attempt
    judged: solved, or the rule it broke, pmapviz's words and JAX's own. Raises ValueError for
    an exercise or a setting it does not have."""
    notes = notebookviews.ready()
    n = devicefacts.facts().local_count
    if key is None:
        return _every(n, notes)
    found = exercisebook.BY_KEY.get(str(key))
    if found is None:
        raise ValueError(
            f"No exercise {quote(key)}: one of {', '.join(exercisebook.BY_KEY)}, or None for all."
        )
    fields = [f.key for f in found.fields]
    unknown = sorted(set(attempt) - set(fields))
    if unknown:
        raise ValueError(
            f"The exercise {found.key} has no setting {quote(unknown[0])}: its settings are "
            f"{', '.join(fields)}."
        )
    judged = exercisebook.judge(found, attempt, n) if attempt else None
    return view(found, n, judged, attempt, bool(answer), notes)


def _every(n: int, notes: tuple[str, ...]) -> View:
    rows = [
        {
            "exercise": e.key,
            "tour step": e.step,
            "title": e.title,
            "task": e.missing(n) or e.task(n),
        }
        for e in exercisebook.EXERCISES
    ]
    body = "".join(notebookviews.paragraph(t) for t in notes)
    body += notebookviews.table(rows, "The tour's exercises")
    text = "\n".join(f"{r['exercise']} (tour step {r['tour step']}): {r['title']}" for r in rows)
    return View(f"The tour's {len(rows)} exercises on {n} device(s)", body, text, {"rows": rows})


def view(
    e: Exercise,
    n: int,
    judged: Judgement | None,
    attempt: dict[str, Any],
    answer: bool,
    notes: tuple[str, ...] = (),
) -> View:
    """An exercise as a view: the task, the attempt's judgement, the hint, the worked answer."""
    para = notebookviews.paragraph
    parts = [para(t) for t in notes] + [para(e.task(n))]
    lines = [e.task(n)]
    data: dict[str, Any] = {"exercise": e.key, "devices": n, "step": e.step}
    title = f"Exercise {e.key} (tour step {e.step}): {e.title}"
    if judged is None and (missing := e.missing(n)) is not None:
        parts.append(notebookviews.notice_box(missing))
        lines.append(missing)
    if judged is not None:
        data["attempt"] = {k: str(v) for k, v in attempt.items()}
        data["solved"], data["kind"] = judged.solved, judged.kind
        data["said"] = judged.said
        if judged.solved:
            title, words = f"{title}: solved", "Solved."
        elif not judged.checked:  # e.g. an exercise that needs more devices than these
            title, words = f"{title}: not checked", judged.words
        else:
            title, words = f"{title}: not yet", f"Not yet: {judged.rule}. {judged.words}"
        parts.append(notebookviews.notice_box(words))
        lines.append(words)
        if judged.said:
            parts.append(notebookviews.code_block(judged.said, "What JAX itself says"))
            lines.append(f"What JAX itself says: {judged.said}")
    parts.append(para(f"Hint: {e.hint(n)}"))
    lines.append(f"Hint: {e.hint(n)}")
    if answer:
        typed = e.answer(n)
        data["answer"] = typed
        shown = "\n".join(f"{k}={v!r}" for k, v in typed.items())
        parts += [notebookviews.code_block(shown, "The worked answer"), para(e.why(n))]
        lines += [f"Worked answer: {shown}", e.why(n)]
    return View(title, "".join(parts), "\n".join(lines), data, source=judged)
