"""The shared flags: the device count applied before JAX starts (keeping the user's XLA_FLAGS),
and the device set each command names.
"""

import json
import os
import subprocess
import sys

from pmapviz.core.devices import jaxstartup
from tests.conftest import ROOT


def test_user_xla_flags_are_kept_and_count_overridden():
    code = (
        "import os; from pmapviz.core.devices import jaxstartup; import sys;"
        "jaxstartup.apply(jaxstartup.parse_settings(['--devices','5'], os.environ));"
        "import jax; print(len(jax.devices())); print(os.environ['XLA_FLAGS'])"
    )
    env = {
        **os.environ,
        "PMAPVIZ_DEVICES": "",
        "XLA_FLAGS": "--xla_force_host_platform_device_count=2 --xla_cpu_enable_fast_math=false",
    }
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    count, flags = r.stdout.strip().splitlines()
    assert count == "5"
    assert "--xla_cpu_enable_fast_math=false" in flags
    assert "--xla_force_host_platform_device_count=5" in flags and "=2" not in flags


def test_on_two_device_sets_each_command_says_which_it_runs_on(capsys, monkeypatch):
    """A TPU chip beside the emulated CPU devices: the lesson commands run on the larger set
    unless --device-set says otherwise, and say so on stderr (stdout stays the output)."""
    from pmapviz.app import cli
    from tests import fakes
    from tests.conftest import TEST_DEVICES

    monkeypatch.setattr(jaxstartup, "apply", lambda settings: None)  # the suite's devices
    with fakes.fake_devices("tpu", 1):
        assert cli.main(["mesh", "--json"]) == 0
        run = capsys.readouterr()
        assert json.loads(run.out)["mesh"]["shape"] == [2, TEST_DEVICES // 2]
        assert run.err.strip() == (
            f"pmapviz: on {TEST_DEVICES} emulated CPU devices "
            "(--device-set tpu: 1 TPU v5 lite device)"
        )
        assert cli.main(["mesh", "--device-set", "tpu", "--json"]) == 0
        run = capsys.readouterr()
        assert json.loads(run.out)["mesh"]["shape"] == [1]
        assert run.err.startswith("pmapviz: on 1 TPU v5 lite device (--device-set cpu:")
        assert cli.main(["mesh", "--device-set", "gpu"]) == 2
        assert "`gpu` is not a device set here. This process has: auto, tpu, cpu" in (
            capsys.readouterr().err
        )
    assert cli.main(["mesh", "--json"]) == 0  # one set again: nothing said about sets
    assert capsys.readouterr().err == ""
