"""Hostile input, property-based: drive every page's widgets (and its URL) through AppTest with
random and hostile values, and assert that no exception element ever appears.

Each page keeps one AppTest session across examples, as a person fiddling with the page would:
an example is one widget value, and the examples before it are its history (so sequences of
values are tried without drawing them per example, which cost a rerun each and found nothing a
session's history does not). Examples per page: PMAPVIZ_FUZZ_EXAMPLES (default 100, so the 11
pages give 1,100 widget values, over the robustness issue's floor of 1,000; README: a longer
run). Developer runs draw new cases each
time; CI (CI=true loads the 'ci' profile of tests/conftest.py) replays a fixed, derandomized set.
Buttons that start long work (sweeps, training, launching processes, the 10M example) are left
to their own tests; every other widget is fair game.

Besides "no exception", every run asserts that no value typed or linked came back as markup: no
Markdown image or link to example.invalid outside code spans, no raw HTML tag from the input in an
element that renders HTML.
"""

from __future__ import annotations

import os
import re
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from harness import stclient
from pmapviz.app.page_registry import APP_KEYS, PAGES
from pmapviz.app.ui import page_check
from pmapviz.core.ui import shell
from tests.conftest import ROOT
from tests.core.ui.conftest import TEXT_KINDS

EXAMPLES = int(os.environ.get("PMAPVIZ_FUZZ_EXAMPLES", "100"))
# long runs, and (ex_sm_meshes) a switch away from the page under test; each is pressed by its
# own tests: compiling and timing (cp_hidden: tests/features/compiled/ui/test_hidden_view.py),
# a profiler capture (cp_trace: test_timelines.py, test_compiled_page.py), the tour's timing and
# two-process demos (tour_time, tour_cluster: test_tour.py), the pod sweep (po_sweep: 20 CPU-s
# of TPU compiles, half the fuzz's time; tests/features/pods/ui/test_pods_form.py), the slice
# sweep and the lesson "one slice or two" (po_slices, po_lesson: test_slices_view.py)
HEAVY_KEYS = {
    "tl_go",
    "tl_explorer",
    "cl_go",
    "dot_run",
    "tr_go",
    "tr_time",
    "tl_cancel",
    "tr_stop",
    "me_sweep",
    "ex_sm_meshes",
    "cp_hidden",
    "cp_trace",
    "tour_time",
    "tour_cluster",
    "po_sweep",
    "po_slices",
    "po_lesson",
}
HOSTILE = [
    "",
    " ",
    "8,,3",
    "1e309",
    "nan",
    "inf",
    "-inf",
    "-1",
    "0",
    "-0",
    "None",
    "none",
    "null",
    "ünïcødé ✓",
    "🙂🙂",
    "9" * 400,
    ", ".join(["2"] * 40),
    "99999999999, 99999999999, 99999999999",
    "(8, 1_250_000, 3)",
    "[]",
    "()",
    "[8 3]",
    "0->1, 0->1",
    "0 1 | 1 2",
    "[[0,1],[2,99]]",
    "<script>alert(1)</script>",
    "'; DROP TABLE x; --",
    "__import__('os').system('ls')",
    "1/0",
    "\x00",
    "\n\n",
    "8",
    "3, 8",
    "2",
    "64",
    "65",
    "-3",
    "1e9",
    "0.5",
    "1_000",
    "0x10",
    "i",
    "a b",
    "9" * 30,
    "-9999",
    "+2",
    "3->0",
    "0 1 2 3 | 4 5 6 7",
    "4, 0",
    "0, 3",
    "1, 1, 1, 1",
]
# digits that str.isdigit() accepts but int() does not (superscripts), and other scripts' digits
NON_ASCII_DIGITS = ["²", "¹", "³", "8²", "²,3", "١", "٣", "５", "８, ３", "2, ¹"]
BEYOND_INT64 = [
    str(2**63),
    str(2**64),
    str(10**30),
    str(-(2**63) - 1),
    str(-(2**64)),
    f"8, {2**63}",
    f"{2**63}, 3",
    f"0->{2**63}",
    f"0 1 | {2**64} 3",
]
# element counts beyond int64 (the output of the first is (8, 2**30, 2**30): XLA aborts)
OVERFLOW_SHAPES = [
    "8, 1073741824, 1",
    "1, 1073741824",
    f"{2**40}, {2**40}",
    f"4, {2**62}",
    f"8, {2**31}, {2**31}",
    f"8, 1, {2**31}",
    f"{2**62}, {2**62}",
]
MARKUP = [
    "![x](http://example.invalid/a.png)",
    "[click](http://example.invalid)",
    "<img src=x onerror=alert(1)>",
    "**bold**",
    "$x$",
    "`code`",
    "# heading",
    "<a href='http://example.invalid'>a</a>",
    ":red[red]",
    "\\",
    "|a|b|\n|-|-|",
]
HOSTILE += NON_ASCII_DIGITS + BEYOND_INT64 + OVERFLOW_SHAPES + MARKUP
_huge = st.sampled_from([2**30, 2**31, 2**40, 2**62, 2**63, 2**64, 10**30])
overflow_shapes = st.lists(st.one_of(_huge, st.integers(0, 16)), min_size=1, max_size=4).map(
    lambda dims: ", ".join(map(str, dims))
)
# the classes of the hostile-links issue are drawn about a third of the time
_new_classes = st.sampled_from(NON_ASCII_DIGITS + BEYOND_INT64 + OVERFLOW_SHAPES + MARKUP)
text_values = st.one_of(
    st.sampled_from(HOSTILE),
    _new_classes,
    _new_classes,
    _new_classes,
    overflow_shapes,
    st.integers(-(2**70), 2**70).map(str),
    st.text(alphabet=st.characters(categories=["Nd", "No"]), min_size=1, max_size=4),
    st.text(max_size=40),
    st.integers(-(10**12), 10**12).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.lists(st.integers(-3, 12), min_size=0, max_size=6).map(lambda v: ", ".join(map(str, v))),
)
# every key a page reads, from its registry entry (and app.py's on every page)
QUERY_KEYS = list(dict.fromkeys(k for p in PAGES for k in (*p.keys(), *APP_KEYS)))

_MD_LINK = re.compile(r"\]\(\s*<?https?://example\.invalid", re.I)
_HTML_TAG = re.compile(r"<(img|a|script|iframe)\b[^>]*(example\.invalid|onerror|src=x)", re.I)


def crashed(at: AppTest) -> list[str]:
    """Tracebacks, and app.py's last resort (shell.page_failed): a crash it caught is still a
    crash nobody foresaw, which a widget or a link must never cause."""
    found = [f"exception: {str(e.value)[:100]}" for e in at.exception]
    found += [
        "app.py's last resort caught an error" for e in at.error if e.value == shell.UNEXPECTED
    ]
    return found


def markup_injections(at: AppTest) -> list[str]:
    """Elements whose Markdown (or HTML) would show a hostile input as an image, a link or a
    tag: an input echoed in a message must be escaped or shown as code, never rendered."""
    found = []
    for kind in (*TEXT_KINDS, "exception"):
        for el in getattr(at, kind):
            text = str(getattr(el, "value", "") or "")
            plain = stclient.outside_code(text)
            if _MD_LINK.search(plain):
                found.append(f"{kind}: markdown image/link from the input: {text[:120]!r}")
            proto = getattr(el, "proto", None)
            if getattr(proto, "allow_html", False) and _HTML_TAG.search(text):
                found.append(f"{kind}: raw HTML from the input: {text[:120]!r}")
    return found


_sessions: dict[str, AppTest] = {}
_history: dict[str, list[str]] = {}  # per page: what its session was given, in order


def _steady() -> None:
    """AppTest as a server after its first request (page_check.steady_server_patches), for good."""
    for module, name, value in page_check.steady_server_patches():
        setattr(module, name, value)


def session(path: str) -> AppTest:
    if path not in _sessions:
        _steady()
        sys.argv = ["app.py"]
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
        at.switch_page(path).run()
        _sessions[path] = at
    return _sessions[path]


def widgets(at: AppTest) -> list:
    found = []
    for kind in (
        "text_input",
        "selectbox",
        "number_input",
        "radio",
        "multiselect",
        "checkbox",
        "button",
        "selectbox",
    ):
        for w in getattr(at, kind):
            if getattr(w, "disabled", False):
                continue
            if kind == "button" and (w.key in HEAVY_KEYS or str(w.label).startswith("Run")):
                continue
            found.append((kind, w))
    return found


# One action = every random choice it could need, drawn up front, so that what hypothesis
# draws never depends on the page's state; the action is then mapped onto whatever is there.
action_st = st.tuples(
    st.integers(0, 10**6),  # which widget
    text_values,  # for text inputs
    st.lists(st.integers(0, 10**6), min_size=1, max_size=3),  # option indices
    st.sampled_from([0.0, 1.0, 0.5]) | st.floats(0, 1),  # position in a number range
    st.booleans(),
)


def act(action, kind: str, w) -> str:
    _, text, picks, frac, flag = action
    if kind == "text_input":
        value = text
    elif kind in ("selectbox", "radio"):
        options = list(w.options)
        value = options[picks[0] % len(options)]
    elif kind == "multiselect":
        options = list(w.options)
        value = list(dict.fromkeys(options[i % len(options)] for i in picks[1:]))
    elif kind == "number_input":
        lo = w.min if w.min is not None else -(10**6)
        hi = w.max if w.max is not None else 10**6
        lo, hi = int(max(lo, -(10**9))), int(min(hi, 10**9))
        value = int(lo + (hi - lo) * frac)
    elif kind == "checkbox":
        value = flag
    else:
        w.click()
        return f"click {getattr(w, 'key', None) or w.label!r}"
    w.set_value(value)
    return f"{kind} {getattr(w, 'key', None) or getattr(w, 'label', '')!r} <- {value!r}"[:200]


FUZZ_PAGES = [p for p in PAGES]


@pytest.mark.skipif("PMAPVIZ_FUZZ_EXAMPLES" in os.environ, reason="a run of its own size")
def test_the_default_run_tries_at_least_a_thousand_widget_values():
    assert EXAMPLES * len(FUZZ_PAGES) >= 1000  # the robustness issue's floor, CI included


@pytest.mark.parametrize("info", FUZZ_PAGES, ids=[p.url_path for p in FUZZ_PAGES])
@settings(
    max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=list(HealthCheck)
)
@given(action=action_st)
def test_no_widget_value_produces_a_traceback(info, action):
    at = session(info.path)
    history = _history.setdefault(info.path, [])
    options = widgets(at)
    assert options, f"{info.path}: no widget left to try (after {history[-5:]})"
    kind, w = options[action[0] % len(options)]
    history.append(act(action, kind, w))
    at.run(timeout=120)
    assert not crashed(at), (history[-10:], crashed(at))
    assert not markup_injections(at), (history[-10:], markup_injections(at))


@pytest.mark.parametrize("info", FUZZ_PAGES, ids=[p.url_path for p in FUZZ_PAGES])
@settings(
    max_examples=max(20, EXAMPLES // 5),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
@given(query=st.dictionaries(st.sampled_from(QUERY_KEYS), text_values, max_size=6))
def test_crafted_urls_are_validated_like_widgets(info, query):
    _steady()
    sys.argv = ["app.py"]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(info.path).run()
    assert not crashed(at), (query, crashed(at))
    assert not markup_injections(at), (query, markup_injections(at))


ISSUE_CLASSES = (NON_ASCII_DIGITS, BEYOND_INT64, OVERFLOW_SHAPES, MARKUP)
STRIDE = 13  # turns between two pages' first fields: prime to every class's size


def class_values(turn: int) -> list[str]:
    """What one text input gets: '²', then one value of each of the issue's classes, the
    ``turn``-th of each (rotating), as the hostile-links test gives each query key alone. The
    turns run on over every page's fields, so the fields between them meet every value of
    every class; the random search above draws the classes a third of the time besides."""
    return ["²", *(values[turn % len(values)] for values in ISSUE_CLASSES)]


def test_the_rotation_gives_every_value_of_every_class():
    every = {v for values in ISSUE_CLASSES for v in values}
    assert {v for turn in range(max(map(len, ISSUE_CLASSES))) for v in class_values(turn)} >= every
    # the first two fields of each page (see test_every_text_input_takes_every_hostile_class)
    assert {
        v for k in range(len(FUZZ_PAGES)) for t in (0, 1) for v in class_values(STRIDE * k + t)
    } >= every


@pytest.mark.timeout(900)
@pytest.mark.parametrize("info", FUZZ_PAGES, ids=[p.url_path for p in FUZZ_PAGES])
def test_every_text_input_takes_every_hostile_class(info):
    """Deterministic complement to the random search: every text input of the page gets '²'
    and a value of each of the issue's classes (non-ASCII digits, beyond int64, overflowing
    shapes, Markdown and HTML; :func:`class_values`), one at a time; all failures are
    collected and reported together."""
    _steady()
    sys.argv = ["app.py"]
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    at.switch_page(info.path).run()
    keys = [w.key for w in at.text_input if w.key and not getattr(w, "disabled", False)]
    failures = []
    # pages start the rotation STRIDE turns apart: the first two fields of the pages meet every
    # value of every class
    first_turn = STRIDE * FUZZ_PAGES.index(info)
    for turn, key in enumerate(keys, start=first_turn):
        original = at.text_input(key=key).value
        for value in class_values(turn):  # each replaces the last: one hostile field at a time
            at.text_input(key=key).set_value(value)
            at.run(timeout=120)
            problems = crashed(at) + markup_injections(at)
            if problems:
                failures.append(f"{key} <- {value!r}: {problems[0]}")
            if crashed(at) or not any(w.key == key for w in at.text_input):
                at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
                at.switch_page(info.path).run()
            if not any(w.key == key for w in at.text_input):
                break
        if any(w.key == key for w in at.text_input):
            at.text_input(key=key).set_value(original)
            at.run(timeout=120)
    tried = len(keys) * len(class_values(0))
    assert not failures, f"{len(failures)} of {tried}:\n" + "\n".join(failures)
