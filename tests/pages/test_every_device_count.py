"""Never an error by default, on any device count: every page and every tour step, opened
through app.py with its default settings, and every button it shows pressed once, on 1 and 3
devices (with this test process's 8, where tests/pages/ runs every page, the house's "every
device count": one device, a count nothing divides evenly by, and the default), with no
exception and no error box anywhere. Each count is a long walk: the whole suite runs a part of
the walks (tests/rotation.py), a test named runs both counts. Other counts:
``benchmarks/every_device_count.py 2 5`` walks the same way and prints what it found.

The device count is fixed per process when JAX starts (this test process has
tests/conftest.py's 8), so each count walks in a fresh Python process: this file run as a
script (``python tests/pages/test_every_device_count.py 3``, the walker below), which prints
one JSON line. The pages are driven the way ``pmapviz.app.ui.page_check`` drives them for
``python -m pmapviz doctor``: app.py through Streamlit's AppTest, ``switch_page``, and
``page_check.steady_server_patches`` (a server after its first request).

Nothing is whitelisted: an error box a page shows on purpose is still an error box here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import traceback
from pathlib import Path

import pytest

from pmapviz.core.base.pageinfo import page_file

ROOT = Path(__file__).resolve().parents[2]
# long walks (tests/rotation.py), a part a run: every run walks every page, step and button in
# AppTest on this process's 8 devices (tests/pages/)
COUNTS = (
    pytest.param(1, marks=pytest.mark.rotates(cpu_s=17)),
    pytest.param(3, marks=pytest.mark.rotates(cpu_s=22)),
)
MARK = "PMAPVIZ-WALK-JSON "  # the walker's one result line on stdout
TOUR = page_file("tour")
RUN_TIMEOUT = 120  # seconds for one AppTest run (a page load or one button's rerun)
WALK_TIMEOUT = 900  # seconds for one device count's whole walk (about 15 s here)
MAX_PRESSES = 40  # per page or step: a bound, far above any page's count of buttons
MAX_DEPTH = 3  # a button revealed by a button revealed by a button ... is still pressed

# Pages whose default sizes would make the walk slow: their query from page_check.PAGE_ACTIONS
# (timing sweep sizes and repeats, training steps, cluster size). Every other page is opened with no
# query at all, its defaults (compiled's PAGE_ACTIONS query picks a different program, not a smaller
# one, so it is not used here).
SMALL = (page_file("timing"), page_file("training"), page_file("cluster"))

# Buttons not pressed, and why (prefixes of keys, or keys).
SKIPPED_PREFIXES = {
    "share_": "the 'Share this view' popover (pmapviz/core/ui/url_state.py share_link), "
    "not an action",
}
SKIPPED = {
    "ex_sm_meshes": "calls st.switch_page('pages/meshes.py') "
    "(pmapviz/features/meshes/ui/migration_view.py "
    "_to_meshes): leaves the page under test",
}
# Buttons whose work does not depend on this server's device count, not pressed here: their own
# AppTests press them on this process's 8 devices. Two launch the same two worker processes with
# one CPU device each, whatever the server holds (cluster.launch(2, 1) from the page's p=2&d=1
# and from tourruns.launch_two_processes), and cost two fresh JAX processes; the Pods page's sweep
# compiles its program (the link's, not sized from the devices: podsettings.program) for TPU
# slices with libtpu, ten seconds of compiles that read nothing of this server's devices.
SAME_ON_EVERY_COUNT = {
    "cl_go": "launches p=2 processes of d=1 CPU device each on any count "
    "(pressed by tests/pages/test_cluster_page.py)",
    "tour_cluster": "launches 2 processes of 1 CPU device each on any count "
    "(pressed by tests/pages/test_tour.py::test_live_demos_behind_buttons)",
    "po_sweep": "compiles for TPU slices, whatever the local devices "
    "(pressed by tests/features/pods/ui/test_pods_form.py)",
}
# Buttons that move the tour to another step (walked in its own visit): pressed last, and the
# buttons of the step they show are not pressed as this step's.
NAVIGATION = ("tour_prev", "tour_next")
# Lazy sections (expanders that draw their content only while open, so their buttons are not shown
# until a person opens them): opened like a button press ("open:<key>"), then the buttons they
# reveal are pressed.
SECTIONS = {page_file("explorer"): ("ex_sm_open", "ex_tr_open", "ex_smap_open")}


# ------------------------------------------------------------------ the walker (subprocess)
def _skip_reason(ident: str) -> str | None:
    for prefix, why in SKIPPED_PREFIXES.items():
        if ident.startswith(prefix):
            return why
    if ident in SAME_ON_EVERY_COUNT:
        return SAME_ON_EVERY_COUNT[ident]
    return SKIPPED.get(ident)


def _ident(button) -> str:
    """A button's key, or ``label:<label>`` for one without a key."""
    return button.key or f"label:{button.label}"


def _buttons(at) -> dict[str, bool]:
    """{ident: enabled} of every button the page shows, in page order."""
    return {_ident(b): not b.disabled for b in at.button}


def _find(at, ident: str):
    return next((b for b in at.button if _ident(b) == ident), None)


class _Walker:
    def __init__(self, app_test, argv: list[str], count: int):
        self.app_test = app_test
        self.argv = argv
        self.count = count
        self.traces: list[str] = []  # tracebacks caught since the last snapshot

    def open(self, page: str, query: dict):
        """app.py, switched to ``page`` with ``query`` (as page_check._page_run)."""
        sys.argv = list(self.argv)
        at = self.app_test.from_file(str(ROOT / "app.py"), default_timeout=RUN_TIMEOUT).run()
        self.traces.clear()  # the first request's (Home's): the page's own come next
        for k, v in query.items():
            at.query_params[k] = v
        at.switch_page(page).run()
        return at

    def snapshot(self, after: str, at, seconds: float, crash: str | None = None) -> dict:
        view = ([h.value for h in at.header] or [t.value for t in at.title]) if at else []
        event = {
            "after": after,
            "seconds": round(seconds, 1),
            "view": str(view[0])[:80] if view else "",
            "exceptions": [f"{e.value} | {' '.join(e.stack_trace)[-700:]}" for e in at.exception]
            if at
            else [],
            "errors": [str(e.value)[:1000] for e in at.error] if at else [],
            "warnings": [str(e.value)[:300] for e in at.warning] if at else [],  # not asserted
            "traces": self.traces[:],
        }
        if crash:
            event["exceptions"].append(crash)
        self.traces.clear()
        return event

    def visit(self, page: str, query: dict) -> dict:
        record = {
            "page": page,
            "query": query,
            "events": [],
            "shown": [],
            "pressed": [],
            "skipped": {},
            "not_pressed": {},
        }
        t0 = time.monotonic()
        try:
            at = self.open(page, query)
        except Exception as err:  # noqa: BLE001 - reported, the walk goes on
            record["events"].append(
                self.snapshot("on load", None, time.monotonic() - t0, _crash(err))
            )
            return record
        record["events"].append(self.snapshot("on load", at, time.monotonic() - t0))
        shown = _buttons(at)
        fresh = [i for i, on in shown.items() if on]
        queue = [(i, 0) for i in fresh if i not in NAVIGATION]
        queue += [(f"open:{key}", 0) for key in SECTIONS.get(page, ())]
        queue += [(i, 0) for i in fresh if i in NAVIGATION]  # last: they move to another step
        done: set[str] = set()
        while queue and len(record["pressed"]) < MAX_PRESSES:
            ident, depth = queue.pop(0)
            if ident in done:
                continue
            done.add(ident)
            if why := _skip_reason(ident):
                record["skipped"][ident] = why
                continue
            at, event = self.press(at, page, query, ident)
            if event is None:
                record["not_pressed"][ident] = "not shown, or disabled, on a fresh page"
                continue
            record["pressed"].append(ident)
            record["events"].append(event)
            if ident in NAVIGATION:  # another step's buttons: that step's own visit has them
                continue
            now = _buttons(at) if at else {}
            shown.update({i: shown.get(i, False) or on for i, on in now.items()})
            if depth < MAX_DEPTH:  # revealed (or enabled) by this press: pressed next, now
                queued = {i for i, _ in queue}
                queue[:0] = [
                    (i, depth + 1)
                    for i, on in now.items()
                    if on and i not in done and i not in queued
                ]
        record["shown"] = list(shown)
        record["seconds"] = round(time.monotonic() - t0, 1)
        return record

    def press(self, at, page: str, query: dict, ident: str):
        """Press ``ident`` on ``at`` (or, if an earlier press moved the page on, on a fresh
        page); returns the AppTest and the event, or (at, None) if it is not to be pressed."""
        t0 = time.monotonic()
        try:
            if ident.startswith("open:"):
                at = at or self.open(page, query)
                at.session_state[ident[len("open:") :]] = True
                at.run()
            else:
                button = _find(at, ident) if at else None
                if button is None or button.disabled:
                    at = self.open(page, query)
                    button = _find(at, ident)
                    if button is None or button.disabled:
                        return at, None
                button.click().run()
        except Exception as err:  # noqa: BLE001 - reported, the walk goes on
            return None, self.snapshot(ident, None, time.monotonic() - t0, _crash(err))
        return at, self.snapshot(ident, at, time.monotonic() - t0)


def _crash(err: BaseException) -> str:
    return "the walk itself: " + "".join(traceback.format_exception(err))[-1200:]


def _keep_uncaught_tracebacks(walker: _Walker) -> None:
    """Streamlit's handler of an error that escapes app.py (or a fragment) shows a redacted
    message (app.py turns client.showErrorDetails off): keep the traceback for the report."""
    from streamlit.runtime import fragment
    from streamlit.runtime.scriptrunner import exec_code

    for module in (exec_code, fragment):
        handler = module.handle_user_script_exception

        def keep(ex, *args, _handler=handler, **kwargs):
            walker.traces.append("".join(traceback.format_exception(ex))[-1500:])
            return _handler(ex, *args, **kwargs)

        module.handle_user_script_exception = keep


def start_walker(count: int) -> _Walker:
    """This fresh process started on ``count`` devices (before anything imports JAX), served
    as a server after its first request, and a walker that keeps every traceback. The walk
    below and tests/pages/test_captions.py's walker start this way."""
    argv = ["app.py", "--devices", str(count), "--platform", "cpu"]
    from pmapviz.core.devices import jaxstartup

    jaxstartup.apply(jaxstartup.parse_settings(argv[1:], os.environ))  # before anything imports JAX
    from streamlit.testing.v1 import AppTest

    from pmapviz.app.ui import page_check
    from pmapviz.core.ui import shell

    walker = _Walker(AppTest, argv, count)
    caught = shell.page_failed

    def page_failed(err: BaseException) -> None:  # app.py's last resort: keep the traceback
        walker.traces.append("".join(traceback.format_exception(err))[-1500:])
        caught(err)

    shell.page_failed = page_failed  # app.py and shell.fragment look it up when they call it
    _keep_uncaught_tracebacks(walker)
    for module, name, value in page_check.steady_server_patches():
        setattr(module, name, value)
    return walker


def walk(count: int) -> dict:
    """Every page and tour step on ``count`` devices, every button pressed once."""
    walker = start_walker(count)
    from pmapviz.app import page_registry
    from pmapviz.app.ui import page_check
    from pmapviz.core.ui import shell
    from pmapviz.features.tour import toursteps

    queries = {page: query for page, query, _ in page_check.PAGE_ACTIONS if page in SMALL}
    visits = [(p.path, queries.get(p.path, {})) for p in page_registry.PAGES if p.path != TOUR]
    visits += [(TOUR, {"step": str(s)}) for s in range(1, len(toursteps.STEPS) + 1)]
    t0 = time.monotonic()
    records = []
    for page, query in visits:
        records.append(walker.visit(page, query))
        print(f"{page} {query} {records[-1].get('seconds')} s", file=sys.stderr, flush=True)
    return {
        "count": count,
        "devices": len(shell.device_report().labels),
        "visits": records,
        "seconds": round(time.monotonic() - t0, 1),
    }


# ------------------------------------------------------------------ the test (pytest)
def _name(record: dict) -> str:
    if record["page"] == TOUR:
        return f"tour step {record['query'].get('step')}"
    query = "&".join(f"{k}={v}" for k, v in record["query"].items())
    return record["page"] + (f"?{query}" if query else "")


def _required() -> dict[str, set[str]]:
    """page_check.PAGE_ACTIONS' buttons, by visit name."""
    from pmapviz.app.ui import page_check

    required: dict[str, set[str]] = {}
    for page, query, buttons in page_check.PAGE_ACTIONS:
        if page == TOUR:
            name = f"tour step {query.get('step', '1')}"
        else:
            name = _name({"page": page, "query": query if page in SMALL else {}})
        required.setdefault(name, set()).update(buttons)
    return required


def _expected() -> list[str]:
    """Every page (with its SMALL query) and every tour step, by visit name."""
    from pmapviz.app import page_registry
    from pmapviz.app.ui import page_check
    from pmapviz.features.tour import toursteps

    queries = {page: query for page, query, _ in page_check.PAGE_ACTIONS if page in SMALL}
    names = [
        _name({"page": p.path, "query": queries.get(p.path, {})})
        for p in page_registry.PAGES
        if p.path != TOUR
    ]
    return names + [f"tour step {s}" for s in range(1, len(toursteps.STEPS) + 1)]


def problems(walk_result: dict, required: dict[str, set[str]], expected: list[str]) -> list[str]:
    """Every exception and error box (each text once, with every page, step and press where
    it showed, and the traceback where one was caught), every page or step not visited, and
    every PAGE_ACTIONS button shown but not pressed."""
    lines = []
    visited = {_name(r): r for r in walk_result["visits"]}
    lines += [f"- {name}: never visited" for name in expected if name not in visited]
    found: dict[tuple[str, str, str], list[str]] = {}
    for name, record in visited.items():
        for event in record["events"]:
            where = "on load" if event["after"] == "on load" else f"after pressing {event['after']}"
            if record["page"] == TOUR and event["view"]:
                where += f" (showing {event['view'][:40]})"
            trace = "\n".join(t[-900:] for t in event["traces"])
            for kind in ("exceptions", "errors"):
                for text in event[kind]:
                    found.setdefault((kind, text[:600], trace), []).append(f"{name}, {where}")
        missed = {b for b in required.get(name, ()) if b in record["shown"]}
        elsewhere = set(record["skipped"]) & set(SAME_ON_EVERY_COUNT)  # pressed by their tests
        if missed := sorted(missed - set(record["pressed"]) - elsewhere):
            lines.append(f"- {name}: PAGE_ACTIONS buttons shown but not pressed: {missed}")
    for (kind, text, trace), places in found.items():
        label = "EXCEPTION" if kind == "exceptions" else "ERROR BOX"
        lines.append(f"- {label}: {text}\n    at: " + "\n        ".join(places))
        if trace:
            lines.append("    traceback:\n      " + trace.replace("\n", "\n      "))
    return lines


def notes(walk_result: dict, required: dict[str, set[str]]) -> list[str]:
    """What was not pressed, and why (not failures): PAGE_ACTIONS buttons the page did not
    show on this count, buttons skipped, buttons gone by the time their turn came."""
    lines = []
    for record in walk_result["visits"]:
        name = _name(record)
        if absent := sorted(required.get(name, set()) - set(record["shown"])):
            lines.append(f"  (note) {name}: PAGE_ACTIONS buttons not shown here: {absent}")
        for ident, why in {**record["skipped"], **record["not_pressed"]}.items():
            lines.append(f"  (note) {name}: {ident} not pressed: {why}")
    return lines


def fresh_process(script: Path, count: int, timeout: float, *args: str) -> tuple[dict, float]:
    """``python script count *args`` in a fresh process on ``count`` CPU devices (JAX fixes
    the count when it starts: this process has 8), the script printing its result as one
    ``MARK`` line of JSON; returns that result and the seconds the process took. The walk
    below and tests/pages/test_captions.py run their walkers through it."""
    env = {
        **os.environ,
        "PMAPVIZ_DEVICES": str(count),
        "JAX_PLATFORMS": "cpu",
        "PYTHONPATH": str(ROOT),
    }
    env.pop("PMAPVIZ_PLATFORM", None)
    env.pop("JAX_NUM_CPU_DEVICES", None)  # this test process's 8 (jaxstartup.apply sets it again)
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, str(script), str(count), *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    took = time.monotonic() - t0
    found = [line for line in r.stdout.splitlines() if line.startswith(MARK)]
    assert r.returncode == 0 and found, (
        f"the walker failed (rc {r.returncode}):\n{r.stderr[-3000:]}"
    )
    return json.loads(found[-1][len(MARK) :]), took


@pytest.mark.xdist_group("every_device_count")  # heavy: one at a time, on one worker
@pytest.mark.timeout(WALK_TIMEOUT + 300)
@pytest.mark.parametrize("count", COUNTS)
def test_every_page_step_and_button_works_on_this_many_devices(count):
    result, took = fresh_process(Path(__file__).resolve(), count, WALK_TIMEOUT)
    print(f"{count} device(s): the walk took {took:.0f} s")
    assert result["devices"] == count, f"the walk ran on {result['devices']} devices, not {count}"
    required = _required()
    found_problems = problems(result, required, _expected())
    pressed = sum(len(v["pressed"]) for v in result["visits"])
    head = (
        f"On {count} device(s), {len(result['visits'])} pages and tour steps, {pressed} "
        f"presses ({took:.0f} s):"
    )
    said = notes(result, required)
    print("\n".join([head, *said]))
    if found_problems:  # one readable block, no repr of the list after it
        pytest.fail("\n".join([head, *found_problems, *said]), pytrace=False)


if __name__ == "__main__":  # the walker: python tests/pages/test_every_device_count.py COUNT
    sys.path.insert(0, str(ROOT))
    result = walk(int(sys.argv[1]))
    print(MARK + json.dumps(result), flush=True)
