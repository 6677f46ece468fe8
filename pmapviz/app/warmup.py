"""A server's start, warmed before its visitors ask: what a first visit would otherwise do while
someone waits (issue 62: Home took 5.8 s on the first visit after a start, the Pods page 10.9 s).

- :func:`process`: JAX started on the server's devices (``jaxstartup.apply``, the call every
  page run makes first, with the same settings), pandas whole (``heavyimports.ready``), the
  modules of the app's pages imported, Home's hello-pmap compiled, and the start-up heap frozen
  (``heavyimports.start``, whose collection holds the interpreter for a few tenths of a
  second). ``pmapviz serve`` does this before the server answers. ``streamlit run app.py`` has
  no start of its own (Streamlit runs the script only for a visitor): there the first visit
  does it, as before.
- :func:`pods`: the Pods page's default program compiled for its default slice, in a thread of
  its own (``podwarm.start``: the server's memory pool and the compile turn, like the page's
  own compile, whose first visit then finds it kept, or waits for it instead of compiling it a
  second time). ``pmapviz serve`` starts it once the server is warm. Nothing where libtpu is
  not installed; libtpu's first words go where ``podtopology`` keeps them, not to the
  terminal.

Measured with ``benchmarks/responsiveness.py``.
"""

from __future__ import annotations

import importlib
import pkgutil
import threading

from pmapviz.core.base import heavyimports, valueparse
from pmapviz.core.devices import jaxstartup
from pmapviz.core.pods import podtopology, podwarm
from pmapviz.features.home.ui import hello_pmap
from pmapviz.features.pods import podsettings

_ONCE = threading.Lock()
_STARTED: list[bool] = []


def ui_modules() -> list[str]:
    """Every module of the app's ``ui`` packages but the page recipes and the entry script
    (Streamlit runs those as scripts)."""
    import pmapviz

    names = []
    for info in pkgutil.walk_packages(pmapviz.__path__, "pmapviz."):
        parts = info.name.split(".")
        if "ui" in parts and "pages" not in parts and "entry" not in parts:
            names.append(info.name)
    return names


def process(settings: jaxstartup.Settings) -> bool:
    """JAX started with ``settings``, pandas whole, every ui module imported. False (and
    nothing more done) where JAX cannot start as asked: the first page then says why."""
    try:
        jaxstartup.apply(settings)
    except valueparse.SettingError:
        return False
    heavyimports.ready()
    for name in ui_modules():
        importlib.import_module(name)
    hello_pmap.warm(jaxstartup.describe(settings).count)  # Home's own run, compiled
    started = heavyimports.start()  # the start-up heap frozen now, not after the first page
    if started is not None:
        started.join()
    return True


def pods() -> threading.Thread | None:
    """The Pods page's first compile, in the background, once per process; None where this
    machine cannot compile for a pod, or where it was started before."""
    with _ONCE:
        if _STARTED or not podtopology.availability().ok:
            return None
        _STARTED.append(True)
    schema = podsettings.schema(jaxstartup.applied_settings().devices)
    value = {k: schema.field(k).parse(schema.field(k).default, k) for k in ("pod", "prog")}
    return podwarm.start(podsettings.program(value["prog"]), value["pod"])
