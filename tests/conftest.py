"""Test-wide set-up: fix the device count before anything imports JAX.

Unit and AppTest tests share this one pytest process, so they share one JAX backend with
TEST_DEVICES emulated CPU devices. End-to-end tests start their own servers (see tests/e2e).
"""

import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEST_DEVICES = 8

os.environ["PMAPVIZ_DEVICES"] = str(TEST_DEVICES)
# JAX's persistent compilation cache: one folder for the run's processes (servers, the CLI),
# kept between runs (programs are keyed by their HLO and source lines), never the user's own
COMPILE_CACHE = os.environ.setdefault(
    "PMAPVIZ_COMPILE_CACHE", str(Path(tempfile.gettempdir()) / f"pmapviz-tests-jax-{os.getuid()}")
)
os.environ.pop("PMAPVIZ_PLATFORM", None)
# Where the machine says PYTHONDONTWRITEBYTECODE, each of the hundreds of processes the suite
# starts (servers, CLI runs, cluster and sandbox workers, kernels) compiled the checkout's
# sources it imports again. The suite's processes write bytecode (__pycache__/, git-ignored).
if os.environ.pop("PYTHONDONTWRITEBYTECODE", None):
    sys.dont_write_bytecode = False
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pmapviz.core.devices import compilecache, jaxstartup  # noqa: E402

jaxstartup.apply(
    jaxstartup.Settings(
        devices=TEST_DEVICES,
        platform="cpu",
        devices_source="env",
        compile_cache=compilecache.parse(COMPILE_CACHE, compilecache.ENV),
    )
)

# Property tests explore new random cases on every developer run; in CI they replay a fixed,
# derandomized set, so that a landing never depends on the luck of the draw.
from hypothesis import settings as _hypothesis_settings  # noqa: E402

_hypothesis_settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    _hypothesis_settings.load_profile("ci")


import pytest  # noqa: E402

# Every AppTest of a test process shares one registry of installed Streamlit components, found
# once, as a server finds them at start (page_check.components_found_once: 130 ms per AppTest
# otherwise, spent reading every installed distribution's metadata), and waits for a run by
# joining its thread (page_check.waits_without_polling: AppTest's own wait polls every ms).
from pmapviz.app.ui import page_check  # noqa: E402

for _module, _name, _value in (
    page_check.components_found_once(),
    page_check.waits_without_polling(),
):
    setattr(_module, _name, _value)

# The two-worker rules (groups and the ALONE lock) and the pytest-xdist 3.8 loadgroup
# workaround: a plugin of their own, loaded in the controller and in every worker. The long
# walks, a part a run (tests/rotation.py). And the wheel, built once a run for the modules that
# install it (tests/wheelbuild.py).
pytest_plugins = ["tests.xdist_groups", "tests.rotation", "tests.wheelbuild"]


@pytest.fixture()
def fake_devices():
    """``with fake_devices("gpu"):`` describes fake H200s (or "tpu": v5e chips) instead of
    the CPU devices the tests run on (tests/fakes.py)."""
    from tests import fakes

    return fakes.fake_devices


@pytest.fixture(autouse=True)
def _own_shared_results(monkeypatch):
    """Each test its own shared results (:mod:`pmapviz.core.running.sharedresults`): a result
    one test's run kept is not another test's, which expects to run its own."""
    from pmapviz.core.running import sharedresults

    monkeypatch.setattr(sharedresults, "_SHARED", sharedresults.SharedResults())
