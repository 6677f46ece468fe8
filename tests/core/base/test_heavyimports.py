"""pmapviz.core.base.heavyimports: pandas imported whole, once, under one lock, and whole before
any page code runs (its import may start beside JAX's, and ready() waits for it); the
background warm-up only freezes the start-up heap.
Each test runs in a fresh interpreter: this one has imported pandas long ago."""

import subprocess
import sys
import textwrap

from tests.conftest import ROOT


def _fresh(code: str) -> str:
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


def test_importing_warmup_imports_no_pandas():
    assert (
        _fresh("import sys, pmapviz.core.base.heavyimports; print('pandas' in sys.modules)")
        == "False"
    )


def test_many_threads_asking_at_once_all_get_the_whole_module():
    out = _fresh("""
        import threading
        from pmapviz.core.base import heavyimports
        got, errors = [], []
        def ask():
            try:
                got.append(heavyimports.pandas().DataFrame({"a": [1, 2]}).shape)
            except Exception as err:
                errors.append(repr(err))
        threads = [threading.Thread(target=ask) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        print(sorted(set(got)), len(got), errors)
    """)
    assert out == "[(2, 1)] 8 []"


def test_start_freezes_the_heap_in_the_background_once_and_imports_nothing():
    """The warm-up after the first page imports nothing: a module half imported in the
    background is what Plotly read as a 'partially initialised module' (the one import rule)."""
    out = _fresh("""
        import sys
        from pmapviz.core.base import heavyimports
        before = set(sys.modules)
        first = heavyimports.start(delay_s=0.2)
        again = heavyimports.start()
        first.join(60)
        print(sorted(set(sys.modules) - before), again, first.daemon, first.name)
    """)
    assert out == "[] None True pmapviz-heavyimports"


def test_ready_imports_pandas_whole_once_and_then_returns_at_once():
    out = _fresh("""
        import sys, time
        from pmapviz.core.base import heavyimports
        was = "pandas" in sys.modules
        heavyimports.ready()
        t = time.perf_counter()
        for _ in range(1000):
            heavyimports.ready()
        print(was, hasattr(sys.modules["pandas"], "DataFrame"), time.perf_counter() - t < 0.5)
    """)
    assert out == "False True True"


def test_the_warm_up_takes_the_start_up_heap_out_of_every_full_collection():
    """Streamlit collects gen 2 after every run; after the warm-up, that walk skips the objects
    that were alive at start-up (JAX, Streamlit, pandas) and still frees new cycles."""
    out = _fresh("""
        import gc, weakref
        import jax, streamlit
        from pmapviz.core.base import heavyimports
        heavyimports.ready()
        class Node: pass
        old = Node(); old.self = old; old_ref = weakref.ref(old); del old  # garbage before
        walked_before = len(gc.get_objects())
        heavyimports.start().join(60)
        walked_after = len(gc.get_objects())
        new = Node(); new.self = new; new_ref = weakref.ref(new); del new  # garbage after
        gc.collect(2)
        print(walked_before, gc.get_freeze_count(), walked_after, old_ref() is None,
              new_ref() is None)
    """)
    before, frozen, after, old_freed, new_freed = out.split()
    assert int(frozen) > 0.9 * int(before)
    assert int(after) < 0.05 * int(before)
    assert (old_freed, new_freed) == ("True", "True")


def test_begin_imports_beside_the_caller_and_ready_waits_for_the_whole_module():
    """The first page starts pandas' import in a thread while it starts JAX; ready() then
    waits for that import, so no page code ever meets a half-made pandas."""
    out = _fresh("""
        import sys
        from pmapviz.core.base import heavyimports
        thread = heavyimports.begin()
        again = heavyimports.begin()
        import jax; jax.devices()  # the caller's own start, beside it
        heavyimports.ready()
        whole = hasattr(sys.modules["pandas"], "DataFrame")
        print(thread.name, thread.daemon, again, whole, heavyimports.begin())
    """)
    assert out == "pmapviz-import-pandas True None True None"
