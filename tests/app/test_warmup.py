"""A server's warm-up (what `pmapviz serve` does before it answers), in a process of its own as
the server runs it: JAX started as asked, every ui module imported, the start-up heap frozen,
the Pods page's first compile kept, once; and not a word on the terminal."""

import json
import os
import subprocess
import sys

import pytest

from pmapviz.app import warmup
from pmapviz.core.devices import accelerators, jaxstartup
from tests.conftest import ROOT

SERVER = """
import gc, json, os, sys
from pmapviz.app import cli, warmup
cli.quiet_terminal()  # as `pmapviz serve` starts
from pmapviz.core.devices import jaxstartup
ok = warmup.process(jaxstartup.parse_settings(["--devices", "3"], os.environ))
import jax
from pmapviz.core.pods import podcompile
thread = warmup.pods()
thread.join()
print(json.dumps({
    "ok": ok,
    "devices": jax.device_count(),
    "imported": [m for m in warmup.ui_modules() if m not in sys.modules],
    "frozen": gc.get_freeze_count(),
    "kept": [list(k) for k in podcompile._KEPT],
    "again": warmup.pods() is None,
}))
"""


def test_the_warm_up_starts_jax_imports_the_pages_and_keeps_the_pods_compile_quietly():
    env = {k: v for k, v in os.environ.items() if k not in ("PMAPVIZ_DEVICES", "XLA_FLAGS")}
    run = [sys.executable, "-c", SERVER]
    out = subprocess.run(run, capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    said = json.loads(out.stdout.strip().splitlines()[-1])
    assert said["ok"] and said["devices"] == 3 and said["imported"] == []
    assert said["frozen"] > 10_000  # JAX, Streamlit, pandas and the app, out of the collector's way
    (kept,) = said["kept"]  # the Pods page's default: its program on its default slice
    assert kept[0] == "psum" and "v5e:2x4" in kept and said["again"]
    assert out.stderr == ""  # no libtpu words, no Streamlit warnings


def test_the_ui_modules_are_every_ui_module_but_the_scripts():
    names = warmup.ui_modules()
    assert "pmapviz.core.ui.recompute" in names and "pmapviz.app.ui.dashboard" in names
    assert "pmapviz.features.pods.ui.pods_form" in names
    assert not [n for n in names if ".pages" in n or ".entry" in n or ".ui" not in n]


def test_a_platform_that_cannot_start_is_left_to_the_first_page():
    if "tpu" in accelerators.accelerators_present():
        pytest.skip("a TPU machine starts it")
    assert warmup.process(jaxstartup.Settings(devices=2, platform="tpu")) is False
