"""Drive a real pmapviz server from outside, as a person's browser does: shared by the
end-to-end tests (tests/e2e) and the benchmarks (benchmarks/).

- ``harness.server``: start and stop a real ``streamlit run`` server on a free port.
- ``harness.browser``: Debian's Chromium through Playwright: wait for a page to finish
  rendering, full-page screenshots, a standard-library PNG reader.
- ``harness.stclient``: Streamlit's own websocket protocol without a browser (hundreds of
  links a minute, or dozens of sessions at once).

Nothing here imports JAX; ``harness.stclient`` imports Streamlit's protobufs, so it is not imported
by this package itself.
"""

from harness.browser import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DIAGRAMS,
    E2E_DEVICES,
    EXCEPTIONS,
    MAIN,
    SIDEBAR,
    click_and_wait_for_text,
    fresh_server,
    main_text,
    read_png,
    screenshot,
    wait_rendered,
)
from harness.server import ROOT, free_port, start_server, stop_server, tree_rss, wait_healthy

__all__ = [
    "CHROMIUM", "CHROMIUM_ARGS", "DIAGRAMS", "E2E_DEVICES", "EXCEPTIONS", "MAIN", "ROOT",
    "SIDEBAR", "click_and_wait_for_text",
    "free_port", "fresh_server", "main_text", "read_png", "screenshot", "start_server",
    "stop_server", "tree_rss", "wait_healthy", "wait_rendered",
]  # fmt: skip
