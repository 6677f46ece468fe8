"""The pages' part of ``python -m pmapviz doctor``: every page driven through Streamlit's
AppTest, its main buttons pressed, as a server would run it; what each page raised, showed as
an error, or said about the CPU on an accelerator. It lives with the adapters because it drives
Streamlit; pmapviz.app.doctorreport (below, no Streamlit) runs it when the CLI hands it over.
The tests make AppTest behave like a server the same way (:func:`steady_server_patches`)."""

from __future__ import annotations

import contextlib
import importlib.util
import sys

from pmapviz.app import doctorcommands, serverconfig
from pmapviz.app.page_registry import PAGES
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import devicefacts, deviceset, devicewords, jaxstartup

# what only emulated CPU devices may say of themselves (a page on a GPU or TPU that says it tells
# the CPU story)
CPU_ONLY_WORDS = (
    "emulated",
    "jax_num_cpu_devices",
    "share the cores",
    "CPU core(s) shared",
    "nothing crosses a wire",
    "copy between threads",
    "no speed-up",
)

# words a page may say on an accelerator too: the local cluster's workers run on CPU devices
# whatever the server holds, and the page shows their code
CPU_BY_DESIGN = {page_file("cluster"): ("jax_num_cpu_devices",)}

# (page, query, buttons pressed in order): each page's checks, from its registry entry
PAGE_ACTIONS: tuple[tuple[str, dict, tuple[str, ...]], ...] = tuple(
    (p.path, query, buttons) for p in PAGES for query, buttons in p.checks
)


def steady_server_patches() -> list[tuple[object, str, object]]:
    """(module, attribute, value) that make Streamlit's AppTest behave like a server after its
    first request. AppTest resets Streamlit's legacy ``pages/`` flag before every run, so each
    run would look like a fresh server's first request and be rerouted (``ui.shell.ensure_routed``),
    losing a button's click; and it compiles app.py and the page anew on every run. The tests
    apply the same patches (tests/pages/conftest.py)."""
    app_test_module, local_runner_module = _streamlit_testing()
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.runtime.scriptrunner.script_cache import ScriptCache

    class RoutedPagesManager(PagesManager):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            PagesManager.uses_pages_directory = False

    scripts = _SCRIPTS.setdefault("cache", ScriptCache())  # one per process, as a server's
    return [
        (app_test_module, "PagesManager", RoutedPagesManager),
        *((m, "ScriptCache", lambda: scripts) for m in (app_test_module, local_runner_module)),
        components_found_once(),
        waits_without_polling(),
    ]


def components_found_once() -> tuple[object, str, object]:
    """(module, attribute, value) that make every AppTest of this process share one registry
    of installed Streamlit components, found once, as a server finds them once when it starts.
    AppTest searches again for each new AppTest, reading the metadata of every installed
    distribution: 130 ms of CPU each on a 2-core machine with 94 distributions, against 4 ms
    for the whole run of a one-line page."""
    app_test_module, _ = _streamlit_testing()
    from streamlit.components.v2.component_manager import BidiComponentManager

    class FoundOnce(BidiComponentManager):
        def discover_and_register_components(self, *, start_file_watching: bool = True) -> None:
            if not _SCRIPTS.get("components_found"):
                super().discover_and_register_components(start_file_watching=start_file_watching)
                _SCRIPTS["components_found"] = True

    registry = _SCRIPTS.setdefault("components", FoundOnce())
    return (app_test_module, "BidiComponentManager", lambda: registry)


def waits_without_polling() -> tuple[object, str, object]:
    """(module, attribute, value) that make AppTest wait for a run's end by joining the
    script's thread, as a server's session waits on its runner's events. AppTest's own wait
    wakes every millisecond and scans every event the run has sent so far, taking the GIL from
    the script it waits for: 4 % of the CPU of a page fuzz (818,000 scans for 323 runs). Same
    timeout, same error when it passes."""
    _, local_runner_module = _streamlit_testing()

    def require_widgets_deltas(runner, timeout: float = 3) -> None:
        if runner._script_thread is not None:  # it ends once the run has sent its last event
            runner._script_thread.join(timeout)
        if runner.script_stopped():
            return
        runner.request_stop()
        runner.join()
        raise RuntimeError(f"AppTest script run timed out after {timeout}(s)")

    return (local_runner_module, "require_widgets_deltas", require_widgets_deltas)


_SCRIPTS: dict = {}


def _streamlit_testing():
    """Streamlit's AppTest modules, imported when pages are checked: the CLI starts without
    Streamlit (``python -m pmapviz --help`` in a fraction of a second)."""
    import streamlit.testing.v1.app_test as app_test_module
    import streamlit.testing.v1.local_script_runner as local_runner_module

    return app_test_module, local_runner_module


def available() -> bool:
    """Whether Streamlit is installed here (a bare accelerator machine may have JAX alone)."""
    return importlib.util.find_spec("streamlit") is not None


@contextlib.contextmanager
def _patched(patches: list[tuple[object, str, object]]):
    saved = [(m, name, getattr(m, name)) for m, name, _ in patches]
    for m, name, value in patches:
        setattr(m, name, value)
    try:
        yield
    finally:
        for m, name, value in saved:
            setattr(m, name, value)


def section(settings: jaxstartup.Settings, progress: doctorcommands.Progress = None) -> list[dict]:
    """Every page through AppTest with its main buttons pressed (``python -m pmapviz doctor``),
    on every device set the process holds (``?on=``): a row per page and set with its
    exceptions, errors, and CPU-only words on an accelerator."""
    argv = doctorcommands.device_flags(settings)
    rows = []
    for name in deviceset.names():
        for page, query, buttons in PAGE_ACTIONS:
            query = {**query, "on": name} if deviceset.has_two() else dict(query)
            doctorcommands.say(progress, f"  {page} {query or ''} {' '.join(buttons)}")
            rows.append(_checked(page, query, buttons, argv, devicefacts.facts(name)))
    return rows


def _checked(
    page: str, query: dict, buttons: tuple[str, ...], argv: list[str], facts: devicefacts.Facts
) -> dict:
    """One page's row: what it raised, showed as an error, or said of the CPU on an
    accelerator set (``facts``: the set it ran on)."""
    sys_argv, sys.argv = sys.argv, [str(serverconfig.ENTRY), *argv]
    try:
        with _patched(steady_server_patches()):
            at, pressed = _page_run(_streamlit_testing()[0].AppTest, page, query, buttons)
        return {**_page_row(page, query, at, facts), "pressed": pressed, "set": facts.platform}
    except Exception as err:  # noqa: BLE001 - a report, not a crash
        return {
            "page": page,
            "query": query,
            "set": facts.platform,
            "errors": [],
            "exceptions": [f"{type(err).__name__}: {str(err)[:200]}"],
            "cpu_words": [],
        }
    finally:
        sys.argv = sys_argv


def cpu_words(texts: list[str], facts: devicefacts.Facts, page: str = "") -> list[str]:
    """The CPU-only words ``page`` said while running on ``facts``' set, if that set is an
    accelerator; what the product says of the emulated set beside it does not count, nor the
    words of code that runs on CPU devices by design (:data:`CPU_BY_DESIGN`)."""
    if facts.emulated:
        return []
    told = "\n".join(texts)
    for sentence in devicewords.beside_sentences(facts):
        told = told.replace(sentence, "")
    return [w for w in CPU_ONLY_WORDS if w in told and w not in CPU_BY_DESIGN.get(page, ())]


def _page_run(app_test, page: str, query: dict, buttons: tuple[str, ...]):
    """The app, switched to ``page`` with ``query``, and the buttons of ``buttons`` that it
    shows pressed in turn; returns it and the buttons pressed."""
    at = app_test.from_file(str(serverconfig.ENTRY), default_timeout=240).run()
    for k, v in query.items():
        at.query_params[k] = v
    at.switch_page(page).run()
    pressed = []
    for key in buttons:
        found = [b for b in at.button if b.key == key and not b.disabled]
        if found:
            found[0].click().run()
            pressed.append(key)
    return at, pressed


def _page_row(page: str, query: dict, at, facts: devicefacts.Facts) -> dict:
    """The page's main area is read for CPU words: the sidebar lists every device set of the
    server, the emulated one beside an accelerator included."""
    texts = [
        str(e.value)
        for kind in (
            "markdown",
            "caption",
            "info",
            "warning",
            "success",
            "error",
            "title",
            "header",
            "subheader",
            "code",
        )
        for e in getattr(at.main, kind)
    ]
    return {
        "page": page,
        "query": query,
        "exceptions": [str(e.value)[:300] for e in at.exception],
        "errors": [str(e.value)[:300] for e in at.error],
        "cpu_words": cpu_words(texts, facts, page),
    }
