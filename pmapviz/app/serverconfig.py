"""The Streamlit server's settings pmapviz runs with, in one place: what the checkout's
``.streamlit/config.toml`` says for ``streamlit run app.py`` (tests/app/test_serverconfig.py
checks the two agree), and what ``pmapviz serve`` passes as Streamlit's flags wherever it is
installed (a wheel has no config file of its own, and a user's folder may hold another).
"""

from __future__ import annotations

from pathlib import Path

# the package's own entry script (pmapviz serve, the doctor's page check)
ENTRY = Path(__file__).resolve().parent / "ui" / "entry" / "streamlit_app.py"

OPTIONS: dict[str, dict[str, object]] = {
    "server": {
        # this machine only; to serve a room deliberately: --address (README "Serving a workshop")
        "address": "127.0.0.1",
        "headless": True,
        "enableXsrfProtection": True,
        "runOnSave": False,
        # the one upload is a cluster report (pmapviz.clusterreport.MAX_BYTES, said by the widget)
        "maxUploadSize": 8,
    },
    "browser": {"gatherUsageStats": False},
    "client": {
        # Streamlit's page list is off (a fresh server flashed the page files on a deep link);
        # ui.page_menu draws ours
        "showSidebarNavigation": False,
        "toolbarMode": "minimal",
        # tracebacks and server paths never reach the browser; every page catches its own too
        "showErrorDetails": "none",
    },
    "theme": {"base": "light", "primaryColor": "#0072B2"},
    # no full gc.collect() after every script run: a room of 30 followers polling twice a
    # second ran ~60 of them a second, each holding the interpreter lock, and the server
    # stopped answering (benchmarks/follow_room.py); Python's own collector still runs
    "runner": {"postScriptGC": False},
}


def flag_options(**overrides: object) -> dict[str, object]:
    """:data:`OPTIONS` as Streamlit's flag options (``{"server.address": "127.0.0.1", ...}``),
    with ``overrides`` (``server_port=8600`` sets ``server.port``) on top."""
    flags = {f"{section}.{key}": v for section, kv in OPTIONS.items() for key, v in kv.items()}
    flags.update({k.replace("_", ".", 1): v for k, v in overrides.items()})
    return flags
