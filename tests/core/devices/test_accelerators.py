"""What JAX could use but does not: install lines, unavailable and held chips, their holders."""

import json
import os
import subprocess
import sys

import pytest

from pmapviz.core.devices import accelerators
from tests.conftest import ROOT
from tests.fakes import TPU_FIXTURES


def test_a_machine_with_a_gpu_but_the_cpu_only_jax_is_told_how_to_install(monkeypatch):
    monkeypatch.setattr(accelerators, "accelerators_present", lambda: ["gpu"])
    monkeypatch.setattr(accelerators, "backends_installed", lambda: ["cpu"])
    (hint,) = accelerators.accelerator_hints("cpu")
    assert "CPU-only build" in hint and "jax[cuda12]==" in hint and "jax[cuda13]==" in hint
    monkeypatch.setattr(accelerators, "backends_installed", lambda: ["cpu", "gpu"])
    assert "--platform cpu" in accelerators.accelerator_hints("cpu")[0]
    assert accelerators.accelerator_hints("gpu") == []
    # the emulated CPU set beside a GPU the process holds: no "restart without it" advice
    assert accelerators.accelerator_hints("cpu", ("gpu", "cpu")) == []


def test_the_unavailable_platform_message_names_backends_and_the_install():
    err = RuntimeError(
        "Unable to initialize backend 'rocm': Backend 'rocm' is not in the list of known "
        "backends: ['cpu', 'tpu']. (set JAX_PLATFORMS='' to ...)"
    )
    text = accelerators.unavailable_message("gpu", err)
    assert "JAX cannot start the GPU here" in text and "set JAX_PLATFORMS" not in text
    assert "Backends this JAX installation has: cpu" in text and "jax[cuda12]==" in text
    assert "--platform cpu" in text and "\n" not in text


def test_the_install_is_advised_only_where_the_backend_is_missing(monkeypatch):
    monkeypatch.setattr(accelerators, "accelerators_present", lambda: [])
    monkeypatch.setattr(accelerators, "backends_installed", lambda: ["cpu"])
    assert "jax[tpu]==" in accelerators.unavailable_message("tpu")
    monkeypatch.setattr(accelerators, "backends_installed", lambda: ["cpu", "tpu"])
    text = accelerators.unavailable_message("tpu")  # libtpu (the pods extra), no chip
    assert "its backend is installed" in text and "pip install" not in text
    assert "no TPU device files" in text and "--platform cpu" in text


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
def test_asking_for_a_missing_accelerator_is_one_line_and_exit_2(platform):
    """python -m pmapviz devices --platform gpu (or tpu) on this CPU-only machine."""
    r = subprocess.run(
        [sys.executable, "-m", "pmapviz", "devices", "--platform", platform],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert f"cannot start the {platform.upper()} here" in line and "--platform cpu" in line
    if platform in accelerators.backends_installed():  # libtpu (the pods extra): no chip
        assert "its backend is installed" in line and "pip install" not in line
        assert "libtpu" not in r.stderr.lower() and "WARNING" not in r.stderr  # none of its noise
    else:
        assert ("jax[cuda12]" if platform == "gpu" else "jax[tpu]") in line


def test_the_app_asked_for_a_missing_gpu_shows_one_page_with_the_install():
    """streamlit run app.py -- --platform gpu without a GPU backend: every page used to show
    Streamlit's redacted error. A fresh process (JAX must not be started yet)."""
    code = (
        "import sys; from streamlit.testing.v1 import AppTest; sys.argv = ['app.py', "
        "'--platform', 'gpu']; at = AppTest.from_file('app.py', default_timeout=60).run(); "
        "print(len(at.exception)); print(at.title[0].value); print(at.error[0].value); "
        "print(at.code[0].value)"
    )
    env = {**os.environ, "PMAPVIZ_PLATFORM": ""}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120, env=env
    )
    assert r.returncode == 0, r.stderr[-2000:]
    exceptions, title, *rest = r.stdout.splitlines()
    text = "\n".join(rest)
    assert exceptions == "0" and title == "pmapviz could not start"
    assert "cannot start the GPU here" in text and "jax[cuda13]==" in text
    assert "--platform cpu" in text


def _jax_said(row: dict) -> RuntimeError:
    """What JAX raised in the doctor's subprocess on the TPU, from its one line."""
    said = row["stderr"].split("(JAX said: ", 1)[1]
    return RuntimeError(said.rsplit(").", 1)[0] + ")")


def test_a_chip_held_by_another_process_is_said_in_one_true_line():
    """On the v5e, every command beside a process holding the chip said 'JAX cannot start
    the auto platform ... For a auto, install ...' (doctor_tpu_v5e.json). Now: which process
    holds it, and what works beside it; never 'auto', never libtpu's sudo rm."""
    doctor = json.loads((TPU_FIXTURES / "doctor_tpu_v5e.json").read_text())
    err = _jax_said(doctor["commands"][0])
    assert "pid 1491" in str(err)
    text = accelerators.unavailable_message("auto", err)
    assert text.startswith("The TPU here is in use by process 1491")
    assert "--platform cpu" in text and "one process at a time" in text
    assert "auto" not in text and "install" not in text and "\n" not in text
    lock = RuntimeError(
        "Unable to initialize backend 'tpu': INTERNAL: Internal error when "
        'accessing libtpu multi-process lockfile. Run "$ sudo rm '
        "/tmp/libtpu_lockfile\". (set JAX_PLATFORMS='' to ...)"
    )
    text = accelerators.unavailable_message("tpu", lock)
    assert "lock file is taken" in text and "sudo" not in text and "rm /tmp" not in text


def test_the_cli_beside_a_held_chip_said_one_line_naming_the_holder(monkeypatch):
    """What the v5e said (beside_cli_v5e.txt): libtpu's ABORTED lock-file message names no
    process; the line pmapviz printed names the one /proc showed holding the chip."""
    seen = (TPU_FIXTURES / "beside_cli_v5e.txt").read_text().splitlines()
    jax_said = next(line for line in seen if line.startswith("RuntimeError: "))
    printed = seen[seen.index("rc=2") + 1]
    monkeypatch.setattr(accelerators, "tpu_holder", lambda: 5440)
    monkeypatch.setattr(accelerators, "_command_of", lambda pid: " (python3 .tpu_check/hold.py 45)")
    err = RuntimeError(jax_said.removeprefix("RuntimeError: "))
    assert "pmapviz: " + accelerators.unavailable_message("auto", err) == printed
    assert "sudo" not in printed and "auto" not in printed


def test_the_holder_is_found_by_its_open_device_files_when_jax_does_not_name_it(tmp_path):
    """On the v5e, libtpu's lock-file message named no process: the one with the chip's
    device files open is found in /proc (here a fake /proc: one bystander, one holder)."""
    for pid, target in ((111, "/dev/null"), (222, "/dev/vfio/0"), (os.getpid(), "/dev/accel0")):
        fd = tmp_path / str(pid) / "fd"
        fd.mkdir(parents=True)
        (fd / "3").symlink_to(target)
    assert accelerators.tpu_holder(str(tmp_path)) == 222  # never this process itself
    (tmp_path / "222" / "fd" / "3").unlink()
    assert accelerators.tpu_holder(str(tmp_path)) is None


def test_the_holder_is_named_by_its_command_line_as_inline_code():
    """This process as the holder: its real command line, read by psutil, in a code span, so
    no Markdown forms from it."""
    import psutil

    said = f"The TPU is already in use by process with pid {os.getpid()}. Not attempting"
    text = accelerators.held_message(said)
    shown = accelerators.command_text(psutil.Process().cmdline())
    assert f"process {os.getpid()} ({accelerators.code_span(shown)})," in text
    assert shown.split()[0] == os.path.basename(sys.orig_argv[0])  # as the OS started it
    assert accelerators.held_message("some other failure") is None


class _Holder:
    """psutil.Process of a process holding the chip, whose command line is ``CMDLINE``."""

    CMDLINE: list[str] = []

    def __init__(self, pid):
        self.pid = pid

    def cmdline(self):
        return list(self.CMDLINE)


def _holder(monkeypatch, cmdline):
    import psutil

    monkeypatch.setattr(psutil, "Process", type("Holder", (_Holder,), {"CMDLINE": cmdline}))
    return accelerators.held_message("in use by process with pid 4242. Not attempting")


def test_the_holders_command_line_is_shown_as_it_is(monkeypatch):
    """What the v5e's holder ran, once shown as 'python3 -c import jax? time? ...'."""
    code = "import jax; time; jax.devices(); print('holder up')"
    text = _holder(monkeypatch, ["/usr/bin/python3", "-c", code])
    assert f'process 4242 (`python3 -c "{code}"`), and a TPU chip' in text
    text = _holder(monkeypatch, ["python3", "-m", "pmapviz", "mesh", "--spec", "P('d', None)"])
    assert "(`python3 -m pmapviz mesh --spec \"P('d', None)\"`)" in text
    text = _holder(monkeypatch, ["sh", "-c", 'echo "$HOME"', ""])
    assert '(`sh -c \'echo "$HOME"\' ""`)' in text  # as a shell would need it
    long = _holder(monkeypatch, ["python3", "-c", "x = 1;" * 100])
    command = long.split("(`", 1)[1].split("`)", 1)[0]
    assert len(command) == accelerators.COMMAND_LIMIT + 3 and command.endswith("...")


def test_a_hostile_command_line_stays_one_line_and_forms_no_markup(monkeypatch):
    hostile = "print(1)\n\x1b[2J **x** <b>y</b> [a](javascript:1) ``tick`"
    text = _holder(monkeypatch, ["python3", "-c", hostile])
    assert "\n" not in text and "\x1b" not in text and text.isprintable()
    inner = "'print(1)??[2J **x** <b>y</b> [a](javascript:1) ``tick`'"  # backticks: shlex's
    assert f"(```python3 -c {inner}```)," in text  # fenced by more backticks than it holds
    assert accelerators.code_span("`a`") == "`` `a` ``"  # CommonMark: a space inside each fence
    assert accelerators.code_span("a") == "`a`"


def test_a_holder_that_cannot_be_read_is_named_by_its_pid_alone(monkeypatch):
    import psutil

    class Gone(_Holder):
        def cmdline(self):
            raise psutil.NoSuchProcess(self.pid)

    monkeypatch.setattr(psutil, "Process", Gone)
    text = accelerators.held_message("in use by process with pid 4242. Not attempting")
    assert text.startswith("The TPU here is in use by process 4242, and a TPU chip")
    assert _holder(monkeypatch, []).startswith("The TPU here is in use by process 4242, and")


def test_the_failing_backend_is_named_where_auto_was_asked():
    err = RuntimeError("Unable to initialize backend 'cuda': no supported devices found")
    text = accelerators.unavailable_message("auto", err)
    assert text.startswith("JAX cannot start the GPU here") and "auto" not in text


def test_what_jax_said_is_shown_as_code_on_one_line_so_no_markup_forms():
    said = "Unable to start 'gpu': **b** <b>x</b>\x1b[31m [a](javascript:1) `t`"
    text = accelerators.unavailable_message("gpu", RuntimeError(said + "\nmore"))
    shown = text.split("(JAX said: ", 1)[1]
    assert shown.startswith("``") and "\n" not in text  # a fence longer than the tick inside
    assert "**b** <b>x</b> [31m [a](javascript:1) `t`" in shown and "\x1b" not in text
