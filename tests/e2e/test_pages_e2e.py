"""Every page in headless Chromium against a real server started with `-- --devices 4`."""

import pytest

from pmapviz.ui import PAGES
from tests.e2e.harness import (
    E2E_DEVICES,
    ROOT,
    fresh_server,
    main_text,
    read_png,
    screenshot,
    wait_rendered,
)

pytestmark = pytest.mark.e2e


@pytest.mark.parametrize("info", PAGES, ids=[p.url_path for p in PAGES])
def test_page_renders_with_device_count(server, page, info):
    url = server + ("/" if info.url_path == "home" else f"/{info.url_path}")
    page.goto(url)
    wait_rendered(page)
    assert page.locator('[data-testid="stException"]').count() == 0
    sidebar = page.locator('[data-testid="stSidebar"]')
    assert f"{E2E_DEVICES} devices" in sidebar.inner_text()
    assert info.title in page.locator('[data-testid="stMain"] h1').first.inner_text() or (
        info.url_path == "home"
    )
    png = read_png(screenshot(page, info.url_path))  # a whole, valid PNG of the whole page
    assert png.width == page.viewport_size["width"] == 1400
    assert page.viewport_size["height"] <= png.height <= 6000  # grown to the content
    assert png.distinct_rows >= 50, png  # drawn: a blank page has one or two distinct rows


def grid_row(page, label: str, n: int) -> list[str]:
    """Texts of the n cells after the row label `label` in a ui.block_grid."""
    return page.evaluate(
        """([label, n]) => {
            const head = [...document.querySelectorAll('[data-testid="stMain"] div')]
                .find(d => d.innerText === label && d.style.fontWeight === '600');
            const out = []; let c = head.nextElementSibling;
            for (let k = 0; k < n && c; k++, c = c.nextElementSibling) out.push(c.innerText);
            return out;
        }""",
        [label, n],
    )


def test_home_hello_pmap_shows_each_device(server, page):
    page.goto(server + "/")
    wait_rendered(page)
    n = E2E_DEVICES
    assert grid_row(page, "device", n) == [f"cpu:{d}" for d in range(n)]
    assert grid_row(page, "x", n) == [str(d) for d in range(n)]
    assert grid_row(page, "y = x * 2", n) == [str(2 * d) for d in range(n)]
    chips = page.locator('[data-testid="stSidebar"]').inner_text()
    for d in range(n):
        assert f"cpu:{d}" in chips


def test_deep_link_on_a_fresh_server_goes_through_app_py(browser):
    """A share link opened before anyone visited '/' must still run app.py (device set-up,
    panel, navigation), not Streamlit's legacy pages/ auto-discovery."""
    with fresh_server(["--devices", "2"], browser) as (url, p):
        p.goto(url + "/timing")
        wait_rendered(p)
        sidebar = p.locator('[data-testid="stSidebar"]').inner_text()
        assert "2 devices" in sidebar
        assert "Timing lab" in sidebar  # our navigation titles, not file names
        assert "Page not found" not in p.locator("body").inner_text()
        assert "Timing lab" in p.locator('[data-testid="stMain"] h1').first.inner_text()


def test_share_links_opened_at_once_on_a_fresh_server_all_go_through_app_py(browser):
    """Three links as the server's very first requests, at once: each page must run inside
    app.py (its device count, not JAX's default; no "Asked for" warning). Before the fix, the
    second page started in Streamlit's legacy mode ran outside app.py in ~1 start of 3."""
    with fresh_server(["--devices", "3"], browser) as (url, first):
        pages = [first, *(first.context.new_page() for _ in range(2))]
        for p, path in zip(pages, ("/tour?step=3", "/compiled", "/"), strict=True):
            p.goto(url + path, wait_until="commit")
        for p in pages:
            wait_rendered(p, timeout_ms=180_000)
            sidebar = p.locator('[data-testid="stSidebar"]').inner_text()
            assert "3 devices" in sidebar and "Asked for" not in sidebar, sidebar[:300]
            assert p.locator('[data-testid="stException"]').count() == 0


def test_restart_command_updates_and_panel_survives_reruns(server, page):
    page.goto(server + "/explorer")
    wait_rendered(page)
    box = page.get_by_label("Devices for the restart command")
    box.fill("2")
    box.press("Enter")
    page.wait_for_function(
        """() => document.querySelector('[data-testid="stSidebar"]').innerText
                 .includes('--devices 2')"""
    )
    wait_rendered(page)
    sidebar = page.locator('[data-testid="stSidebar"]').inner_text()
    assert f"{E2E_DEVICES} devices" in sidebar and "fixed for this server process" in sidebar
    assert page.locator('[data-testid="stException"]').count() == 0


@pytest.mark.parametrize("args", [["--devices", "0"], ["--platform", "quantum"]])
def test_bad_settings_page_in_the_browser(browser, args):
    with fresh_server(args, browser, viewport=(1200, 700)) as (url, p):
        p.goto(url + "/")
        wait_rendered(p)
        assert p.locator('[data-testid="stException"]').count() == 0
        assert "pmapviz could not start" in p.locator("h1").first.inner_text()
        assert "streamlit run app.py -- --devices 8" in main_text(p)
        screenshot(p, "bad-settings-" + args[0].strip("-"))


def test_tour_step_screenshot(server, page):
    page.goto(server + "/tour?step=10")
    wait_rendered(page)
    assert "three ways" in page.locator('[data-testid="stMain"]').inner_text()
    screenshot(page, "tour")


def test_a_gpu_trace_loaded_on_the_compiled_page_draws_its_gpu_lane(server, page):
    """The H200's profiler trace, uploaded through the browser: one lane, gpu:0, named as
    the trace names it (the old reader found no device events in a GPU trace)."""
    from tests.fakes import FIXTURES

    page.goto(server + "/compiled")
    wait_rendered(page)
    page.locator('[data-testid="stFileUploader"] input[type="file"]').set_input_files(
        str(FIXTURES / "pmap_psum_gpu.perfetto_trace.json.gz")
    )
    page.wait_for_function(
        "() => document.querySelector('[data-testid=\"stMain\"]').innerText"
        ".includes('1 device lane(s)')", timeout=60_000,
    )  # fmt: skip
    wait_rendered(page)
    text = main_text(page)
    assert "Module jit__fun: 1 device lane(s), 2 call(s) in the trace" in text
    ticks = page.locator('[data-testid="stPlotlyChart"] .ytick text').all_text_contents()
    assert "gpu:0" in ticks
    assert page.locator('[data-testid="stException"]').count() == 0
    screenshot(page, "compiled-gpu-trace")


def test_a_fresh_servers_first_deep_link_never_lists_the_page_files(browser):
    """Issue 26: the first request of a new server to a deep link showed Streamlit's list of
    the pages/ files ("app, cluster, collectives, ...") and a blank page for 1-3 s. Sampled
    every 50 ms from the first byte: never a file's name as a link; the main area, once
    anything shows, says what is happening, then shows the page."""
    import time

    stems = {p.stem for p in (ROOT / "pages").glob("*.py")} | {"app"}
    with fresh_server(["--devices", "2"], browser, viewport=(1280, 720)) as (url, p):
        p.goto(url + "/compiled?src=collective", wait_until="commit")
        seen_main, file_links = [], []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            links, main = p.evaluate(
                """() => [[...document.querySelectorAll('[data-testid="stSidebar"] a')]
                          .filter(a => getComputedStyle(a).visibility !== 'hidden')
                          .map(a => a.innerText.trim()),
                         (document.querySelector('[data-testid="stMain"]') || {innerText: ''})
                          .innerText.trim()]"""
            )  # fmt: skip
            file_links += [t for t in links if t in stems]
            if main and (not seen_main or seen_main[-1] != main[:40]):
                seen_main.append(main[:40])
            if main.startswith("Compiled program") and links:
                break
            p.wait_for_timeout(50)
        assert not file_links, file_links
        assert seen_main and seen_main[-1].startswith("Compiled program"), seen_main
        assert all(m.startswith(("Compiled program", "hourglass_top")) or "Starting pmapviz" in m
                   for m in seen_main), seen_main  # fmt: skip
