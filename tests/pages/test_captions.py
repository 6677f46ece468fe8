"""Captions from the case shown: every number a page writes around its figures is one the
objects behind the page account for, on 1, 3 and 8 devices, for the explorer's default,
every preset and seeded random settings, and every other page and tour step.

What is read: the text a page shows, in markdown, captions, info, success, warning and error
boxes, titles and headers, and its ``st.html`` sections (the cards, the per-device table: tags
stripped, their ``aria-label`` and ``title`` kept); code is not read (it is generated from the
plan and run by its own tests). What is checked: every number written with thousands separators
(``1,250,000`` or ``1_250_000``), the figures a fixed example leaves behind (the seed's
``10_000_000`` under a (3, 4) plan on 3 devices); small numbers (device counts, axes, step
numbers) are everywhere and not told apart.

What accounts for a number (:func:`accounted`), built from the objects, never from the text:
the page's settings parsed through its own schemas (``PageInfo.schemas``: every int, and every
shape with its products), the plan of the explorer's settings wherever a page reads them (every
dim of every input and output leaf, global and per device, of the planner's fixes, every
product of consecutive dims: element counts and an axis merged into the next; those in bytes;
the device counts), the seed's pairs split over these devices where a page shows the seed
(:mod:`pmapviz.core.planning.seedpairs`), and what a tour step runs (step 3's pairs a device,
step 9's size, step 10's demo).

The device count is fixed per process when JAX starts: this process's 8 run here
(:func:`test_every_caption_on_this_process_accounts_for_its_numbers`); 1 and 3 in fresh
processes, this file run as a script through ``test_every_device_count.fresh_process`` and
``start_walker``, the long walk's own. All three run every time (about 4 s each here).
``PYTHONPATH=. python tests/pages/test_captions.py 3 --show`` prints what it read.

What it cannot see: a number the objects account for, written in the wrong place (the seed's
10,000,000 said where 9,999,999 were used both belong to the seed on 3 devices); the tests of
each module check their sentences whole (tests/core/planning/test_seedpairs.py, ...).
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
import time
from html.parser import HTMLParser
from pathlib import Path

import pytest

from pmapviz.core.base import pytrees
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.planning import scenarios, seedpairs
from tests.pages.test_every_device_count import MARK, ROOT, SMALL, TOUR, fresh_process

EXPLORER, LIVE, TIMING = page_file("explorer"), page_file("live"), page_file("timing")
HOME, MESHES = page_file("home"), page_file("meshes")
SEED = "issue 62, captions"  # the draws' seed, with the device count: the same cases every run
DRAWN = 6  # random explorer settings a device count
TIMEOUT = 600  # seconds for one fresh process's walk (about 5 s here)
# "1,250,000" or "1_250_000", not part of a word, a decimal or a longer digit run
NUMBER = re.compile(r"(?<![\w.])\d{1,3}(?:[,_]\d{3})+(?!\w|[.,_]\d)")
KINDS = ("markdown", "caption", "info", "success", "warning", "error", "title", "header")
DIMS = (1, 2, 3, 5, 16, 1_000, 4_096, 12_345, 1_250_000, 3_333_333)  # one big dim a shape at most


# ------------------------------------------------------------------ what a page shows
class _Words(HTMLParser):
    """The words of a page's HTML: its text, and the labels a reader hears or hovers."""

    def __init__(self):
        super().__init__()
        self.words: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.words += [v for k, v in attrs if k in ("aria-label", "title") and v]

    def handle_data(self, data):
        self.words.append(data)


def words(text: str) -> str:
    """``text`` as read: HTML tags dropped (their labels kept), link targets dropped."""
    parser = _Words()
    parser.feed(re.sub(r"\]\([^)]*\)", "]", text))
    parser.close()
    return " ".join(parser.words)


def shown(at) -> list[tuple[str, str]]:
    """``(kind, words)`` of every text element and ``st.html`` section the page shows."""
    found = [(kind, words(str(e.value))) for kind in KINDS for e in getattr(at, kind)]
    found += [("subheader", words(str(e.value))) for e in at.subheader]
    return found + [("html", words(h.proto.body)) for h in at.get("html")]


def numbers(text: str) -> list[int]:
    """Every number written with thousands separators in ``text``."""
    return [int(re.sub(r"[,_]", "", m)) for m in NUMBER.findall(text)]


# ------------------------------------------------------------------ what accounts for them
def shape_numbers(shape: tuple[int, ...]) -> set[int]:
    """Every product of consecutive dims: each dim, the element count, an axis merged with
    its neighbours."""
    return {math.prod(shape[i:j]) for i in range(len(shape)) for j in range(i + 1, len(shape) + 1)}


def _ints(value) -> set[int]:
    """Every int in a parsed setting (a shape, a list, a tree), with a shape's products."""
    if isinstance(value, bool) or value is None:
        return set()
    if isinstance(value, int):
        return {value}
    if isinstance(value, tuple) and value and all(isinstance(d, int) for d in value):
        return shape_numbers(value)
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list | tuple):
        return set().union(*(_ints(v) for v in value)) if value else set()
    return set()


def _itemsize(dtype: str) -> int:
    import numpy as np

    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


def plan_numbers(plan) -> set[int]:
    """What a plan accounts for: its device counts, and every input and output leaf's shape,
    global and per device, and every shape its fixes propose, with their products, also in
    bytes of the plan's dtypes."""
    shapes = [s for leaf in plan.leaves for s in (leaf.shape, leaf.local_shape) if s]
    shapes += [s for a in plan.arguments for _, s in pytrees.leaves(a.shape_tree, a.name)]
    for tree in (plan.out_shapes, plan.per_device_out_shapes):
        shapes += [s for _, s in pytrees.leaves(tree, "out")] if tree is not None else []
    shapes += [s for q in plan.problems for s in (q.new_shapes or {}).values()]
    dtypes = {a.dtype for a in plan.arguments}
    dtypes |= {d for _, d in pytrees.leaves(plan.out_dtypes, "out", lambda x: isinstance(x, str))}
    counts = set().union(*(shape_numbers(tuple(s)) for s in shapes if s))
    sizes = {_itemsize(d) for d in dtypes if d}
    return {plan.n_devices, plan.devices_used} | counts | {c * b for c in counts for b in sizes}


def mesh_numbers(values: dict) -> set[int]:
    """The Meshes page's arrays on its mesh: each one's block and the blocks' bounds."""
    from pmapviz.features.meshes import meshplacement, meshsettings, meshspecs

    sizes = values["mesh"]
    mesh = meshspecs.Mesh(sizes, meshspecs.parse_axis_names(values["names"], len(sizes)))
    found: set[int] = set()
    for k in range(meshsettings.MAX_ARGS):
        if values.get(f"s{k}") is None or meshspecs.problems(
            mesh, values[f"s{k}"], values[f"p{k}"]
        ):
            continue
        block = meshplacement.local_shape(mesh, values[f"s{k}"], values[f"p{k}"])
        found |= shape_numbers(block) | {j * d for d in block for j in range(mesh.devices + 1)}
    return found


def seed_numbers(n: int) -> set[int]:
    """The seed's pairs on ``n`` devices: asked, used, left out, each block, and its shapes."""
    s = seedpairs.split(n)
    return {s.pairs, s.used, s.left_over, *shape_numbers(s.flat), *shape_numbers(s.blocked)}


def _step_numbers(n: int, step: int) -> set[int]:
    """What tour step ``step`` runs on ``n`` devices, from the objects it runs."""
    from pmapviz.features.home import pmapdemos
    from pmapviz.features.tour import tourruns, toursteps

    demo = toursteps.STEPS[step - 1].demo
    if demo is toursteps.step_dot:
        pairs = n * toursteps.DOT_PAIRS_PER_DEVICE
        return seed_numbers(n) | {toursteps.DOT_PAIRS_PER_DEVICE, pairs, pairs * 3}
    if demo is toursteps.step_scaling:
        return {tourruns.scaling_size(n)}
    if demo is toursteps.step_today:  # the three ways' shapes (pmapdemos' own block size)
        r = pmapdemos.three_ways(n)
        return set().union(*(shape_numbers(r[k]) for k in ("pmap_shape", "jit_shape")))
    return set()


def accounted(n: int, page: str, query: dict) -> set[int]:
    """Every number the objects behind ``page`` opened with ``query`` on ``n`` devices
    account for: its settings, the plan of the explorer's settings where it reads them, the
    seed where it shows it, a tour step's runs."""
    from pmapviz.app import page_registry

    found: set[int] = set(range(1, n + 1))
    for schema in page_registry.page_info(page).schemas(n):
        texts, _ = schema.from_query(query)
        values, _ = schema.parse(texts)
        found |= _ints(values)
        if "fn" in texts and "s0" in texts:  # the explorer's settings: their plan
            for use_pn in (False, True):
                _, plan, _ = scenarios.Scenario.from_texts(texts, n).plan(n, use_pn=use_pn)
                found |= plan_numbers(plan) if plan is not None else set()
        if "mesh" in values:  # the Meshes page: each array's block on its mesh
            found |= mesh_numbers(values)
    if page == TIMING:  # the sizes it offers (a link's refused sizes are told them)
        from pmapviz.features.timing import sweepsetup

        ks = sweepsetup.device_counts(n)
        found |= {s for w in sweepsetup.WORKLOADS for s in sweepsetup.size_choices(w, ks)}
    if page in (HOME, LIVE):
        found |= seed_numbers(n)
    if page == LIVE:
        from pmapviz.core.budgets import memorypool
        from pmapviz.features.live import dotproduct

        found |= {dotproduct.MIN_PAIRS, dotproduct.max_pairs(memorypool.budget(), n)}
    if page == TOUR:
        found |= _step_numbers(n, int(query["step"]))
    return found


# ------------------------------------------------------------------ the cases
def drawn_scenario(n: int, rng: random.Random) -> dict[str, str]:
    """Random explorer settings on ``n`` devices: a function, shapes whose mapped axis fits
    the devices (all of them, or fewer; sometimes planned for a bigger machine), one dim of
    any size a shape, and their in_axes."""
    fn = rng.choice([*scenarios.FUNCTIONS])
    pn = rng.choice((16, 64)) if rng.random() < 0.2 else 0
    m = pn or rng.choice((n, rng.randint(1, n)))  # the mapped axis' length
    big = rng.choice(DIMS)
    if fn in ("double", "local_sum", "normalise", "global_sum"):
        rank = rng.randint(1, 3)
        axis = rng.randrange(rank)
        dims = [rng.choice((2, 3, 4)) for _ in range(rank)]
        dims[axis] = m
        if rank > 1:
            dims[(axis + 1) % rank] = big
        shapes, axes = [tuple(dims)], [axis]
    elif fn == "add":
        shapes, axes = [(m, big)] * 2, [0, rng.choice((0, 0, None))]
        shapes[1] = (big,) if axes[1] is None else shapes[1]
    elif fn == "vdot":
        shapes, axes = [(m, big)] * 2, [0, 0]
    elif fn == "batched_dot":
        shapes, axes = [(m, big, 3)] * 2, [0, 0]
    else:  # matmul, and your own f: its default, tanh(x @ w)
        shapes, axes = [(m, big, 5), (5, 2)], [0, None]
    changes = {f"s{k}": scenarios.shape_text(s) for k, s in enumerate(shapes)}
    changes |= {f"a{k}": scenarios.axis_text(a) for k, a in enumerate(axes)}
    if pn:
        changes["pn"] = str(pn)
    return scenarios.Scenario.defaults(fn, n).with_changes(changes, n).query()


def visits(n: int) -> list[tuple[str, dict]]:
    """Every page at its defaults (the long walk's small queries where it has them), the
    explorer at every preset and at drawn settings, Live and Timing at drawn settings too,
    the Meshes page with a drawn size, and every tour step."""
    from pmapviz.app import page_registry
    from pmapviz.app.ui import page_check
    from pmapviz.features.explorer import presets
    from pmapviz.features.meshes import meshsettings
    from pmapviz.features.timing import sweepsetup
    from pmapviz.features.tour import toursteps

    rng = random.Random(f"{SEED}-{n}")
    small = {page: query for page, query, _ in page_check.PAGE_ACTIONS if page in SMALL}
    found = [(p.path, small.get(p.path, {})) for p in page_registry.PAGES if p.path != TOUR]
    found += [(EXPLORER, p.scenario(n).query()) for p in presets.PRESETS]
    drawn = [drawn_scenario(n, rng) for _ in range(DRAWN)]
    found += [(EXPLORER, q) for q in drawn]
    sizes = rng.sample(sweepsetup.size_choices("dot", sweepsetup.device_counts(n)), 2)
    found += [(LIVE, drawn[0]), (TIMING, {"sizes": ",".join(map(str, sizes)), "r": "3"})]
    rows = meshsettings.default_mesh(n)[0] * rng.choice((250, 1_000))
    found += [(MESHES, {"s0": f"{rows}, 16"})]
    return found + [(TOUR, {"step": str(s)}) for s in range(1, len(toursteps.STEPS) + 1)]


# ------------------------------------------------------------------ the walk
def unaccounted(n: int, page: str, query: dict, texts: list[tuple[str, str]]) -> list[str]:
    """One line per number in ``texts`` that ``accounted`` does not hold."""
    allowed = accounted(n, page, query)
    lines = []
    for kind, text in texts:
        for number in numbers(text):
            if number not in allowed:
                at = text.find(f"{number:,}") if f"{number:,}" in text else text.find(f"{number:_}")
                context = text[max(0, at - 150) : at + 80].replace("\n", " ")
                lines.append(f"{kind}: {number:_} is not the plan's or the page's: ...{context}...")
    return lines


def collect(walker, n: int, show: bool = False) -> dict:
    """Every visit opened by ``walker`` (the explorer's "Open as shard_map" open too), each
    number it shows checked; the visits' count, the numbers checked and every problem."""
    problems, checked, direct = [], 0, 0
    t0 = time.monotonic()
    for page, query in visits(n):
        name = Path(page).stem + (
            "?" + "&".join(f"{k}={v}" for k, v in query.items()) if query else ""
        )
        at = walker.open(page, query)
        if page == EXPLORER:
            at.session_state["ex_sm_open"] = True
            at.run()
        texts = shown(at)
        problems += [f"{name}: exception {e.value}" for e in at.exception]
        problems += [f"{name}: {line}" for line in unaccounted(n, page, query, texts)]
        checked += sum(len(numbers(t)) for _, t in texts)
        direct += sum("block directly" in t for kind, t in texts if kind == "caption")
        if show:
            print(
                name,
                *(f"  {k}: {numbers(t)} {t[:160]!r}" for k, t in texts if numbers(t)),
                sep="\n",
            )
    return {
        "count": n,
        "devices": walker.count,
        "visits": len(visits(n)),
        "checked": checked,
        "direct": direct,
        "problems": problems,
        "seconds": round(time.monotonic() - t0, 1),
    }


def _assert_walk(result: dict, count: int) -> None:
    assert result["devices"] == count, f"walked {result['devices']} devices, not {count}"
    assert result["checked"] > 100, f"only {result['checked']} numbers read: the walk saw little"
    assert result["direct"], "no explorer case showed the shard_map caption's direct split"
    if result["problems"]:
        head = f"On {count} device(s), {result['checked']} numbers in {result['visits']} visits:"
        pytest.fail("\n".join([head, *result["problems"]]), pytrace=False)


# ------------------------------------------------------------------ the tests
def test_every_caption_on_this_process_accounts_for_its_numbers(monkeypatch):
    """This process's 8 devices: every case above, in AppTest, every run."""
    from streamlit.testing.v1 import AppTest

    from tests.conftest import TEST_DEVICES
    from tests.pages.conftest import steady_state_server
    from tests.pages.test_every_device_count import _Walker

    steady_state_server(monkeypatch)
    monkeypatch.setattr(sys, "argv", ["app.py"])  # the walker sets it for each page
    _assert_walk(collect(_Walker(AppTest, ["app.py"], TEST_DEVICES), TEST_DEVICES), TEST_DEVICES)


# One device, and a count 10M does not split over: each in a fresh process, every run (6 to 7
# CPU-seconds each with a cold compile cache, 4 warm: short enough not to rotate)
@pytest.mark.timeout(TIMEOUT + 120)
@pytest.mark.parametrize("count", [1, 3])
def test_every_caption_on_this_many_devices_accounts_for_its_numbers(count):
    result, took = fresh_process(Path(__file__).resolve(), count, TIMEOUT)
    print(f"{count} device(s): {result['checked']} numbers, {took:.0f} s")
    _assert_walk(result, count)


def test_a_fixed_examples_numbers_are_found():
    """The check can fail: the old "Open as shard_map" caption, the seed's numbers under a
    (3, 4) plan on 3 devices, is caught; the caption written from that plan passes."""
    query = scenarios.Scenario.defaults("double", 3).with_changes({"s0": "3, 4"}, 3).query()
    old = (
        "Written for shard_map from the start, you can skip pmap's reshape: in_specs=P('i') "
        "on a (10_000_000, 3) array gives each of 3 devices a (3_333_333, 3) block directly."
    )
    found = unaccounted(3, EXPLORER, query, [("caption", old)])
    assert [line.split(" is ")[0] for line in found] == [
        "caption: 10_000_000",
        "caption: 3_333_333",
    ]
    big = scenarios.Scenario.defaults("double", 3).with_changes({"s0": "3, 4_000"}, 3).query()
    new = "in_specs=P('i') on x as one (12_000,) array gives each of 3 devices a (4_000,) block"
    assert not unaccounted(3, EXPLORER, big, [("caption", new)])
    assert numbers("(1,250,000 pairs, 1_250_000) f32[4096,4096] 0.0278 2,000.5 v1.2_3") == [
        1_250_000,
        1_250_000,
    ]
    assert words("<div aria-label='8 of 1,000'>x <b>(1_000,)</b></div>") == "8 of 1,000 x  (1_000,)"


if __name__ == "__main__":  # the walker: python tests/pages/test_captions.py COUNT [--show]
    sys.path.insert(0, str(ROOT))
    from tests.pages.test_every_device_count import start_walker

    walker = start_walker(int(sys.argv[1]))
    print(MARK + json.dumps(collect(walker, int(sys.argv[1]), "--show" in sys.argv)), flush=True)
