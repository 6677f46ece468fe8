"""Streamlit's own command starts the server: what it is given."""

from pathlib import Path

from pmapviz.app.ui import streamlitserver


def test_the_command_line_is_streamlits_run_with_flags_then_the_scripts_args():
    line = streamlitserver.command_line(
        Path("/x/app.py"), {"server.headless": True, "server.port": 8600}, ["--devices", "4"]
    )
    assert line == [
        "run",
        "/x/app.py",
        "--server.headless=true",
        "--server.port=8600",
        "--",
        "--devices",
        "4",
    ]


def test_serve_returns_streamlits_exit_status(monkeypatch):
    seen = {}

    def fake_main(args, prog_name, standalone_mode):
        seen.update(args=args, prog=prog_name, standalone=standalone_mode)
        raise SystemExit(3)

    monkeypatch.setattr(streamlitserver.streamlit_cli, "main", fake_main)
    assert streamlitserver.serve(Path("/x/app.py"), {}, ["--devices", "2"]) == 3
    assert seen == {
        "args": ["run", "/x/app.py", "--", "--devices", "2"],
        "prog": "pmapviz serve",
        "standalone": False,
    }
    monkeypatch.setattr(streamlitserver.streamlit_cli, "main", lambda **kw: None)
    assert streamlitserver.serve(Path("/x/app.py"), {}, []) == 0
