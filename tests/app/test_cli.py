"""`python -m pmapviz`: each call is a fresh process, so these also prove the device count is
applied before JAX starts, keeping the user's own XLA_FLAGS."""

import json
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from pmapviz.app import cli
from tests.conftest import ROOT


def run_cli(*args, env=None):
    full_env = {**os.environ, "PMAPVIZ_DEVICES": "", **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "pmapviz", *args],
        cwd=ROOT,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_every_command_has_its_subcommand_and_bad_input_exits_2(capsys):
    """The parser has one subcommand per COMMANDS entry, each with --help; an unknown command
    is argparse's exit 2."""
    from pmapviz.app import cli

    parser = cli.build_parser()
    for name in cli.COMMANDS:
        with pytest.raises(SystemExit) as done:
            parser.parse_args([name, "--help"])
        assert done.value.code == 0 and name in capsys.readouterr().out
    rc, _, err = cli.run_here(["no-such-command"])
    assert rc == 2 and "invalid choice" in err


def test_a_reader_that_stops_early_gets_no_traceback():
    """``pmapviz plan | head -1``: the pipe closes after one line; the CLI exits quietly."""
    cmd = f"{sys.executable} -m pmapviz plan --devices 2 --fn add | head -1"
    done = subprocess.run(cmd, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.stdout.count("\n") == 1 and "pmap over 2 device(s)" in done.stdout
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr


def test_import_of_the_cli_loads_neither_jax_nor_streamlit():
    """``--help`` stays fast: the CLI's modules import no JAX, Streamlit or Plotly."""
    code = (
        "import sys, pmapviz.app.cli; "
        "print([m for m in ('jax', 'streamlit', 'plotly') if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_a_command_loads_its_own_modules_only_and_none_imports_the_cli():
    """``plan`` loads cmd_plan (and smap's, for its --smap), not bench's or the doctor's
    modules; no command module imports the CLI that loads it by name (so the table of
    :data:`COMMANDS` hides no cycle)."""
    from pmapviz.app import cli

    code = (
        "import sys; from pmapviz.app import cli; cli.main(['plan', '--plan-devices', '4']); "
        "print(sorted(m for m in sys.modules if '.cmd_' in m))"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.stdout.strip().splitlines()[-1] == str(
        ["pmapviz.features.explorer.cmd_plan", "pmapviz.features.smap.cmd_smap"]  # plan --smap
    ), done.stderr
    for c in cli.COMMANDS.values():
        source = ROOT.joinpath("pmapviz", *c.module.split(".")).with_suffix(".py").read_text()
        assert "app.cli " not in source and "import cli\n" not in source, c.module
        module = cli.command_module(next(n for n, d in cli.COMMANDS.items() if d is c))
        assert callable(getattr(module, c.run)) and (c.flags is None or getattr(module, c.flags))


def test_usage_names_the_command_as_it_was_called(monkeypatch):
    monkeypatch.setattr(sys, "argv", ["/venv/bin/pmapviz", "--help"])
    assert cli.build_parser(load=()).prog == "pmapviz"
    monkeypatch.setattr(sys, "argv", ["/x/pmapviz/__main__.py", "--help"])
    assert cli.build_parser(load=()).prog == "python -m pmapviz"


RUN_WITH_A_TEARDOWN_MARK = (
    "import atexit, sys; atexit.register(lambda: print('TEARDOWN', flush=True)); "
    "sys.argv = ['pmapviz', *sys.argv[1:]]; from pmapviz.app.cli import run; run()"
)
RUN_MAIN = "import sys; from pmapviz.app import cli; sys.exit(cli.main(sys.argv[1:]))"


def _on_two_devices(code: str, argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        cwd=ROOT,
        env={**os.environ, "PMAPVIZ_DEVICES": "2"},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.parametrize(
    "argv, status",
    [
        (["plan", "--fn", "add"], 0),
        (["plan", "--fn", "add", "--shape", "2,4", "--shape", "3,4"], 1),  # a problem
        (["mesh"], 0),
        (["devices"], 0),  # not a quick exit: torn down as usual
    ],
)
def test_plan_hlo_and_mesh_end_once_their_output_is_out(argv, status):
    """cli.QUICK_EXIT: after plan, hlo and mesh the process ends without its teardown (no
    atexit handler runs), with every line main printed and main's status; other commands end
    as usual."""
    with ThreadPoolExecutor(2) as pool:  # two processes of their own, started at once
        quick, plain = pool.map(
            lambda code: _on_two_devices(code, argv), (RUN_WITH_A_TEARDOWN_MARK, RUN_MAIN)
        )
    assert quick.returncode == plain.returncode == status, quick.stderr
    if argv[0] in cli.QUICK_EXIT:
        assert quick.stdout == plain.stdout
    else:  # devices: its free-memory figure moves between two runs
        assert quick.stdout.endswith("TEARDOWN\n")
        assert quick.stdout.splitlines()[0] == plain.stdout.splitlines()[0]
    assert quick.stdout.strip() and "Traceback" not in quick.stderr


# Every way a library could be told to log below WARNING: Streamlit's logger.level in a
# config.toml (and the old STREAMLIT_LOG_LEVEL), JAX's Python and C++ levels, XLA's C++ level.
NOISY = {
    "STREAMLIT_LOG_LEVEL": "debug",
    "JAX_LOGGING_LEVEL": "DEBUG",
    "JAX_DEBUG_LOG_MODULES": "jax",
    "TF_CPP_MIN_LOG_LEVEL": "0",
}
LOG_LINE = re.compile(
    r"^(DEBUG|INFO)\b|^\d{4}-\d\d-\d\d \d\d:\d\d|^[DI]\d{4} \d\d:|ScriptRunContext|bare mode"
)


def _noisy_home(tmp_path) -> dict[str, str]:
    streamlit_dir = tmp_path / ".streamlit"
    streamlit_dir.mkdir()
    (streamlit_dir / "config.toml").write_text('[logger]\nlevel = "debug"\n')
    return {**NOISY, "HOME": str(tmp_path)}


def test_a_command_prints_its_own_output_only_however_loud_the_libraries_are(tmp_path):
    done = run_cli("devices", "--devices", "2", env=_noisy_home(tmp_path))
    assert done.returncode == 0 and "2 emulated CPU devices" in done.stdout
    assert done.stderr == ""


# `pmapviz doctor` with one CLI command in its commands section (`devices`) and the page check
# on its first three pages (Home, the explorer, Live and its button): each command runs in a
# process of its own whose output the doctor captures, so the other nine (22 of the doctor's
# 37 s here) add nothing to what it prints, and three pages run AppTest, whose logging was the
# noise, as twelve do (8 s). The other sections (facts, floor and sweep, transfers, the
# profiler trace) run whole, in the doctor's own process.
DOCTOR_WITH_ONE_COMMAND = (
    "import sys; from pmapviz.app import doctorcommands as d; every = d.command_lines; "
    "d.command_lines = lambda settings, trace: every(settings, trace)[:1]; "
    "from pmapviz.app.ui import page_check as p; p.PAGE_ACTIONS = p.PAGE_ACTIONS[:3]; "
    "sys.argv = ['pmapviz', *sys.argv[1:]]; from pmapviz.app.cli import run; run()"
)


# a long walk (tests/rotation.py): every run checks that a command prints its own output only,
# however loud the libraries are (above), and the doctor's report (tests/app/test_doctorreport.py)
@pytest.mark.rotates(cpu_s=20)
def test_the_doctor_prints_its_report_only(tmp_path):
    """On a TPU, `pmapviz doctor` printed its report and 548 lines of Streamlit's DEBUG log and
    22 bare-mode warnings: it runs every page with AppTest, in this process."""
    done = subprocess.run(
        [sys.executable, "-c", DOCTOR_WITH_ONE_COMMAND, "doctor", "--devices", "2", "--json"],
        cwd=ROOT,
        env={**os.environ, "PMAPVIZ_DEVICES": "", **_noisy_home(tmp_path)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = json.loads(done.stdout)  # every line of stdout is the report's
    assert done.returncode == (0 if report["ok"] else 1)
    assert [p["pressed"] for p in report["pages"]] == [[], [], ["dot_run"]]
    assert [(c["command"], c["rc"], c["where"]) for c in report["commands"]] == [
        ("devices", 0, "a fresh process")
    ]
    assert not [line for line in done.stderr.splitlines() if LOG_LINE.search(line)], done.stderr
    assert done.stderr == ""  # no presenter key either: the page check's AppTest has no terminal


def test_a_librarys_start_up_advice_is_no_commands_output():
    """On the TPU machine JAX warned about the kernel's transparent hugepages at every start:
    2 of the doctor's stderr lines."""
    code = (
        "import warnings; from pmapviz.app import cli; cli.quiet_terminal(); "
        "warnings.warn('Transparent hugepages are not enabled. TPU runtime startup ...'); "
        "warnings.warn('a warning of our own')"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert "hugepages" not in done.stderr and "a warning of our own" in done.stderr


def test_streamlits_bare_mode_warnings_stay_off_though_it_resets_its_levels():
    """Streamlit sets its loggers' levels again whenever its config loads: the warnings it
    gives for pages run without a server stay off, and its other warnings still show."""
    code = (
        "from pmapviz.app import cli; cli.quiet_terminal({}); "
        "from streamlit import logger; logger.set_log_level('debug'); logger.update_formatter(); "
        "from streamlit.runtime.scriptrunner_utils.script_run_context import "
        "get_script_run_ctx as ctx; ctx(); "
        "from streamlit.runtime.caching import cache_data_api; "
        "cache_data_api._LOGGER.warning('No runtime found, using MemoryCacheStorageManager'); "
        "logger.get_logger('root').warning('to view a Streamlit app on a browser, ...'); "
        "logger.get_logger('streamlit.x').debug('a debug line'); "
        "logger.get_logger('streamlit.x').warning('a real warning')"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().endswith("a real warning") and len(done.stderr.splitlines()) == 1


@pytest.mark.parametrize(
    "env, quiet",
    [
        ({}, {}),
        ({"TF_CPP_MIN_LOG_LEVEL": "0"}, {"TF_CPP_MIN_LOG_LEVEL": "1"}),
        ({"TF_CPP_MIN_LOG_LEVEL": "2"}, {"TF_CPP_MIN_LOG_LEVEL": "2"}),
        ({"JAX_LOGGING_LEVEL": "INFO"}, {"JAX_LOGGING_LEVEL": "WARNING"}),
        ({"JAX_LOGGING_LEVEL": "ERROR"}, {"JAX_LOGGING_LEVEL": "ERROR"}),
        (
            {"JAX_DEBUG_LOG_MODULES": "jax"},
            {"JAX_DEBUG_LOG_MODULES": "jax", "JAX_LOGGING_LEVEL": "WARNING"},
        ),
    ],
)
def test_xlas_cpp_log_level_is_kept_at_warning(env, quiet):
    cli.quiet_native_logs(env)
    assert env == quiet


@pytest.mark.parametrize(("sig", "status"), [("SIGTERM", 143), ("SIGINT", 130)])
def test_a_stopped_command_says_so_in_one_line_and_leaves_no_process(sig, status):
    """SIGTERM or Ctrl-C while a cluster launch runs: the command ends through its own cleanup,
    says so in one line, and none of the processes it started is alive 5 s later."""
    import signal
    import time

    import psutil

    cmd = [sys.executable, "-m", "pmapviz", "cluster", "--processes", "2", "--local-devices", "1"]
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    me, deadline = psutil.Process(proc.pid), time.monotonic() + 60
    while len(me.children(recursive=True)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    started = me.children(recursive=True)
    assert len(started) >= 2, "the launch started no workers"
    proc.send_signal(getattr(signal, sig))
    asked = time.monotonic()
    _, err = proc.communicate(timeout=30)
    time.sleep(max(0.0, 5 - (time.monotonic() - asked)))  # 5 s after the signal
    alive = [p.pid for p in started if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
    assert proc.returncode == status and alive == []
    assert err.strip().splitlines() == [
        f"pmapviz: stopped by {sig}; every process it started is ended"
    ]
