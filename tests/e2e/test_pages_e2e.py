"""Every page in headless Chromium against a real server started with `-- --devices 4`."""

import re

import pytest
from playwright.sync_api import expect

from harness import (
    E2E_DEVICES,
    EXCEPTIONS,
    MAIN,
    ROOT,
    SIDEBAR,
    fresh_server,
    screenshot,
    wait_rendered,
)
from pmapviz.app.page_registry import PAGES

pytestmark = pytest.mark.e2e


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
    n = E2E_DEVICES
    expect(page.locator(MAIN)).to_contain_text("y = x * 2")
    wait_rendered(page)
    assert grid_row(page, "device", n) == [f"cpu:{d}" for d in range(n)]
    assert grid_row(page, "x", n) == [str(d) for d in range(n)]
    assert grid_row(page, "y = x * 2", n) == [str(2 * d) for d in range(n)]
    for d in range(n):
        expect(page.locator(SIDEBAR)).to_contain_text(f"cpu:{d}")


def test_restart_command_updates_and_panel_survives_reruns(server, page):
    page.goto(server + "/explorer")
    wait_rendered(page)
    box = page.get_by_label("Devices for the restart command")
    box.fill("2")
    box.press("Enter")
    sidebar = page.locator(SIDEBAR)
    expect(sidebar).to_contain_text("--devices 2")
    wait_rendered(page)
    expect(sidebar).to_contain_text(f"{E2E_DEVICES} devices")
    expect(sidebar).to_contain_text("fixed for this server process")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


def test_bad_settings_page_in_the_browser(browser):
    """The one page a server with a bad setting shows, in the browser. Every bad setting
    (--platform quantum, --devices eight, ...) gets this page: tests/pages/test_app.py's
    test_bad_settings_show_a_message_not_a_traceback checks each one's message."""
    with fresh_server(["--devices", "0"], browser, viewport=(1200, 700)) as (url, p):
        p.goto(url + "/")
        expect(p.locator("h1").first).to_contain_text("pmapviz could not start")
        expect(p.locator(MAIN)).to_contain_text("at least 1")
        started = re.compile(r"streamlit run app\.py( --server\.\S+ \S+)* -- --devices 8")
        expect(p.locator(MAIN)).to_contain_text(started)
        wait_rendered(p)
        expect(p.locator(EXCEPTIONS)).to_have_count(0)
        screenshot(p, "bad-settings-devices")


def test_tour_step_screenshot(server, page):
    page.goto(server + "/tour?step=10")
    expect(page.locator(MAIN)).to_contain_text("three ways")
    wait_rendered(page)
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
    expect(page.locator(MAIN)).to_contain_text(
        "Module jit__fun: 1 device lane(s), 2 call(s) in the trace"
    )
    wait_rendered(page)
    ticks = page.locator('[data-testid="stPlotlyChart"] .ytick text')
    expect(ticks.filter(has_text=re.compile(r"^gpu:0$"))).to_have_count(1)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "compiled-gpu-trace")


# Installed before the page's own scripts (again in each new document, if the page reloads):
# reports what the sidebar's links and the main area show, at every DOM change and every
# animation frame, from the first byte to the end, each time it changes.
RECORD_STATES = """(() => {
    let last = '';
    const sample = () => {
        const links = [...document.querySelectorAll('[data-testid="stSidebar"] a')]
            .filter(a => getComputedStyle(a).visibility !== 'hidden')
            .map(a => a.innerText.trim());
        const main = document.querySelector('[data-testid="stMain"]');
        const state = [links, main ? main.innerText.trim().slice(0, 40) : ''];
        const key = JSON.stringify(state);
        if (key !== last) { last = key; window.__pmapvizState(state); }
    };
    new MutationObserver(sample).observe(document, {subtree: true, childList: true,
                                                    attributes: true, characterData: true});
    const frame = () => { sample(); requestAnimationFrame(frame); };
    requestAnimationFrame(frame);
})()"""


def test_a_fresh_servers_first_links_go_through_app_py_and_never_list_the_files(browser):
    """Share links opened before anyone visited '/', three at once as the server's very first
    requests, must each run app.py (device set-up, panel, navigation: its device count, not
    JAX's default; no "Asked for" warning), not Streamlit's legacy pages/ auto-discovery. Before
    that fix, the second page started in legacy mode ran outside app.py in ~1 start of 3. And
    issue 26: that first request showed Streamlit's list of the pages/ files ("app, cluster,
    collectives, ...") and a blank page for 1-3 s. Recorded in the first tab at every DOM
    change and every frame from the first byte: never a file's name as a link; the main area,
    once anything shows, says what is happening, then shows the page."""
    stems = {p.stem for p in (ROOT / "pages").glob("*.py")} | {"app"}
    states = []
    with fresh_server(["--devices", "3"], browser, viewport=(1280, 720)) as (url, first):
        first.expose_function("__pmapvizState", lambda state: states.append(state))
        first.add_init_script(RECORD_STATES)
        pages = [first, *(first.context.new_page() for _ in range(2))]
        for p, path in zip(pages, ("/compiled?src=collective", "/tour?step=3", "/"), strict=True):
            p.goto(url + path, wait_until="commit")
        expect(first.locator(f"{MAIN} h1").first).to_contain_text(
            "Compiled program", timeout=180_000
        )
        expect(first.locator(f"{SIDEBAR} a").first).to_be_visible()
        for p in pages:
            sidebar = p.locator(SIDEBAR)
            expect(sidebar).to_contain_text("3 devices", timeout=180_000)  # app.py's panel
            wait_rendered(p, timeout_ms=180_000)
            expect(sidebar).not_to_contain_text("Asked for")
            expect(sidebar).to_contain_text("Timing lab")  # our navigation titles, not files
            expect(p.locator(EXCEPTIONS)).to_have_count(0)
            expect(p.locator("body")).not_to_contain_text("Page not found")
    assert len(states) > 2, states  # the recorder ran through the load
    file_links = sorted({t for links, _ in states for t in links if t in stems})
    assert not file_links, file_links
    seen_main = [m for k, (_, m) in enumerate(states) if m and (k == 0 or states[k - 1][1] != m)]
    assert seen_main and seen_main[-1].startswith("Compiled program"), seen_main
    assert all(
        m.startswith(("Compiled program", "hourglass_top")) or "Starting pmapviz" in m
        for m in seen_main
    ), seen_main


SURVIVING = [
    ("/collectives", "Elements per device", "5"),
    ("/meshes", "Shape of argument 1", "16, 16"),
    ("/explorer", "shape of x", f"{E2E_DEVICES}, 7"),
]


def _open_from_menu(page, title: str, heading: str | None = None) -> None:
    page.locator(SIDEBAR).get_by_role("link", name=title).click()
    expect(page.locator("h1")).to_contain_text(heading or title, timeout=60_000)
    wait_rendered(page)


# a long walk (tests/rotation.py): every run brings back a value Streamlit dropped on
# leaving a page (tests/core/ui/test_url_state.py)
@pytest.mark.rotates(cpu_s=7)
def test_pages_settings_survive_visits_to_other_pages(server, page):
    """Streamlit drops a widget's state after a run that did not draw it (another page):
    the page menu there and back must bring the settings back, not empty boxes. One session
    sets a value on three pages in turn, visits Home, then comes back to each."""
    titles = {
        path: next(p.title for p in PAGES if f"/{p.url_path}" == path) for path, *_ in SURVIVING
    }
    page.goto(server + SURVIVING[0][0])
    wait_rendered(page)
    for k, (path, label, value) in enumerate(SURVIVING):
        if k:
            _open_from_menu(page, titles[path])
        box = page.get_by_label(label, exact=True).first
        box.fill(value)
        box.press("Enter")
        wait_rendered(page)
    _open_from_menu(page, "Home", "pmap")
    for path, label, value in SURVIVING:
        _open_from_menu(page, titles[path])
        expect(page.get_by_label(label, exact=True).first).to_have_value(value)
        expect(page.locator(EXCEPTIONS)).to_have_count(0)
