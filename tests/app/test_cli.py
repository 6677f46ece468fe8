"""`python -m pmapviz`: each call is a fresh process, so these also prove the device count is
applied before JAX starts, keeping the user's own XLA_FLAGS."""

import os
import subprocess
import sys

import pytest

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
