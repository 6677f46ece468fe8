"""pmapviz.core.base.heavyimports: pandas imported once, in the background or on demand, never twice
at once.
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


def test_start_imports_pandas_in_the_background_once_per_process():
    out = _fresh("""
        import sys
        from pmapviz.core.base import heavyimports
        first = heavyimports.start(delay_s=0.2)
        before = "pandas" in sys.modules  # still waiting out the delay
        again = heavyimports.start()
        first.join(60)
        print(before, again, first.daemon, first.name, hasattr(sys.modules["pandas"], "DataFrame"))
    """)
    assert out == "False None True pmapviz-heavyimports True"


def test_a_caller_during_the_background_import_waits_for_it():
    """The race the lock prevents: a table drawn while the warm-up thread is mid-import must
    get the finished module, not a partially initialised one."""
    out = _fresh("""
        import time
        from pmapviz.core.base import heavyimports
        thread = heavyimports.start()
        time.sleep(0.01)
        during = thread.is_alive()  # the warm-up thread is importing now
        print(during, heavyimports.pandas().DataFrame([{"x": 1}]).to_dict("records"))
    """)
    assert out == "True [{'x': 1}]"


def test_the_warm_up_takes_the_start_up_heap_out_of_every_full_collection():
    """Streamlit collects gen 2 after every run; after the warm-up, that walk skips the objects
    that were alive at start-up (JAX, Streamlit, pandas) and still frees new cycles."""
    out = _fresh("""
        import gc, weakref
        import jax, streamlit
        from pmapviz.core.base import heavyimports
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
    assert int(frozen) > 0.9 * int(before)  # pandas' objects join them
    assert int(after) < 0.05 * int(before)
    assert (old_freed, new_freed) == ("True", "True")
