"""Start Streamlit's server in this process on the package's entry script: what ``streamlit run``
does, through Streamlit's own command (its flags, its signal handling, its banner)."""

from __future__ import annotations

from pathlib import Path

from streamlit.web import cli as streamlit_cli


def _text(value: object) -> str:
    """A flag's value as Streamlit's command line takes it (``true``, ``8``, ``127.0.0.1``)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def command_line(script: Path, flags: dict[str, object], args: list[str]) -> list[str]:
    """``streamlit``'s arguments: ``run SCRIPT --section.key=value ... -- ARGS``."""
    return ["run", str(script), *(f"--{k}={_text(v)}" for k, v in flags.items()), "--", *args]


def serve(script: Path, flags: dict[str, object], args: list[str]) -> int:
    """Serve ``script`` with Streamlit's flag options ``flags`` and the script's ``args``
    (its ``sys.argv[1:]``) until the server stops; its exit status."""
    try:
        streamlit_cli.main(
            args=command_line(script, flags, args), prog_name="pmapviz serve", standalone_mode=False
        )
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 1
    return 0
