"""Every page from a share link, drawn, and its settings reproduced; presenter mode at 1280x720."""

import re
from urllib.parse import urlsplit

import pytest
from playwright.sync_api import expect

from harness import (
    DIAGRAMS,
    E2E_DEVICES,
    EXCEPTIONS,
    MAIN,
    SIDEBAR,
    read_png,
    screenshot,
    start_server,
    stop_server,
    wait_rendered,
)
from harness.browser import ARTIFACTS
from harness.presenter import picture_first
from pmapviz.app.page_registry import PAGES
from tests.e2e.test_presenter_walk_e2e import WALKED

pytestmark = pytest.mark.e2e
N = E2E_DEVICES


@pytest.fixture(scope="module")
def tab(browser):
    """One browser tab for the module: each test opens its link in it (a new page load, so a
    new Streamlit session), which costs Chromium half of what a fresh context does."""
    ctx = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        yield ctx.new_page()
    finally:
        ctx.close()


def open_link(page, url, size=(1400, 900)):
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(url)
    wait_rendered(page, timeout_ms=120_000)
    return page


def selectbox(page, label):
    return page.locator(f'[data-testid="stSelectbox"] input[aria-label="{label}"]')


LINKS = {
    "explorer": (
        "/explorer?fn=add&s0=3,{n}&s1=3,{n}&a0=1&a1=1&out=1&d0=int32&d1=int32",
        {"shape of x": "3,{n}", "out_axes": "1"},
        {"Function f": "x + y"},
    ),
    "collectives": (
        "/collectives?c=all_gather&n=2&m=3&v=random",
        {"Devices": "2", "Elements per device": "3"},
        {"Collective": "all_gather: every device gets every block"},
    ),
    "training": (
        "/training?model=mlp&k=2&batch=64&steps=7&lr=0.2&red=psum",
        {"Global batch": "64", "Steps": "7", "Learning rate": "0.2"},
        {"Model": "Two-layer MLP classifier", "Devices": "2"},
    ),
    "timing": (
        "/timing?w=matmul&r=5&sizes=64,1024&ks=1,2&impls=pmap,vmap",
        {},
        {"Workload": "Matrix multiply", "Timed runs per measurement": "5"},
    ),
    "cluster": ("/cluster?p=3&d=1", {}, {"Processes": "3", "CPU devices per process": "1"}),
    "tour": ("/tour?step=6", {}, {}),
    "pods": (
        "/pods?pod=v4:2x2x2&prog=psum&batch=0&gen=v4",
        {"Batch (0: its own)": "0"},
        {"TPU slice": "TPU v4 2x2x2 (8 chips)"},
    ),
    "live": ("/live?fn=double&s0={n},3&a0=0&out=0", {}, {}),
    "meshes": (
        "/meshes?mesh=1x{n}&names=rows,cols&s0=2,{n}&p0=P(None,%20%27cols%27)&s1=&s2=",
        {
            "Mesh (axis sizes)": "1x{n}",
            "Axis names": "rows,cols",
            "PartitionSpec of argument 1": "P(None, 'cols')",
        },
        {},
    ),
}


@pytest.mark.parametrize("info", PAGES, ids=[p.url_path for p in PAGES])
def test_every_page_renders_and_its_share_link_reproduces_the_view(server, tab, info):
    """Every page from a link: its settings (LINKS; a page without one, at its bare address),
    the server's device count in the sidebar, its title, no exception, a whole screenshot; then
    the share control shows a link to exactly this view. (Every page at its defaults is drawn by
    the text-field walk and, in presenter mode, by the first-screen checks.)"""
    name = info.url_path
    bare = "/" if info is PAGES[0] else f"/{name}"
    path, texts, selects = LINKS.get(name, (bare, {}, {}))
    page = open_link(tab, server + path.format(n=N))
    expect(page.locator(SIDEBAR)).to_contain_text(f"{N} devices")
    if info is not PAGES[0]:  # Home's h1 names the app
        expect(page.locator(f"{MAIN} h1").first).to_contain_text(info.title)
    for label, value in texts.items():
        expect(page.get_by_label(label, exact=True).first).to_have_value(value.format(n=N))
    for label, value in selects.items():
        expect(selectbox(page, label)).to_have_value(re.compile(re.escape(value)))
    main = page.locator(MAIN)
    if name == "tour":
        expect(main).to_contain_text("6. axis_name and collectives")
    if name == "pods":  # compiled by libtpu for the link's slice, drawn with its hosts
        expect(main).to_contain_text("v4:2x2x2: 8 chips on 2 hosts, 2 devices a chip")
        expect(main.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
    if name == "live":
        expect(main).to_contain_text("PASS")
        expect(main).to_contain_text(f"({N}, 3)")  # shapes shown as parsed
    if name == "meshes":
        expect(main).to_contain_text("Each device holds (2, 1); replicated over rows.")
    if name == "timing":
        chips = page.locator('[data-testid="stMultiSelect"]')
        expect(chips.nth(0)).to_contain_text("64")
        expect(chips.nth(0)).to_contain_text("1,024")
        expect(chips.nth(2)).to_contain_text("vmap")
    wait_rendered(page)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    # named apart from the screenshots other tests take of the same page after an action
    png = read_png(screenshot(page, "home" if info is PAGES[0] else f"page-{name}"))
    assert png.width == page.viewport_size["width"] == 1400  # a whole, valid PNG
    assert page.viewport_size["height"] <= png.height <= 6000  # grown to the content
    assert png.distinct_rows >= 50, png  # drawn: a blank page has one or two distinct rows
    if name not in LINKS:
        return
    # the share control (a lazy popover: its link is drawn when it opens) shows a link to exactly
    # this view
    page.get_by_role("button", name="Share this view").click()
    link = page.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]')
    expect(link).to_contain_text(f"/{name}?", timeout=30_000)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


def test_presenter_mode_at_1280x720(server, tab):
    page = open_link(tab, server + "/explorer?present=1", size=(1280, 720))
    expect(page.locator('[data-testid="stMainMenu"]')).to_be_hidden()  # no app chrome
    # issue 65: the sidebar (where the presenter leads) opens from presenter mode too
    expect(page.locator('[data-testid="stExpandSidebarButton"]')).to_be_visible()
    root_px = page.evaluate("() => getComputedStyle(document.documentElement).fontSize")
    assert float(root_px.rstrip("px")) >= 20
    # nothing overflows the window: diagrams, their blocks and grids fit at 1280 px
    overflow = page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=\"stHtml\"] div')]"
        ".some(c => c.getBoundingClientRect().right > window.innerWidth + 1)"
    )
    assert not overflow
    expect(page.locator(DIAGRAMS)).to_have_count(3)
    expect(page).to_have_url(re.compile(r"present=1"))
    page.screenshot(path=str(ARTIFACTS / "presenter-explorer.png"))
    picture_first(page, "/explorer")  # the explorer's check of PRESENTER_PAGES, on this load
    page.goto(server + "/collectives?present=1&c=ppermute")
    wait_rendered(page)
    screenshot(page, "presenter-collectives")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    assert not page.evaluate(
        "() => [...document.querySelectorAll('[data-testid=\"stPlotlyChart\"]')]"
        ".some(c => c.getBoundingClientRect().right > window.innerWidth + 1)"
    )


# every button in the first screen whose label does not fit it ("Previ..."): its text's
# scrollWidth over its clientWidth (Streamlit ends a cut label with an ellipsis)
CUT_BUTTONS = """() => [...document.querySelectorAll('button')]
    .filter(b => { const r = b.getBoundingClientRect();
        return r.width > 0 && r.height > 0 && r.bottom > 0 && r.top < window.innerHeight
            && r.right > 0 && r.left < window.innerWidth; })
    .map(b => b.querySelector('[data-testid="stMarkdownContainer"]') || b)
    .map(t => [t.innerText.trim(), t])
    .filter(([label, t]) => label && t.scrollWidth > t.clientWidth)
    .map(([label, t]) => `${label}: ${t.scrollWidth} > ${t.clientWidth} px`)"""


@pytest.mark.parametrize("size", [(1280, 720), (1400, 900)], ids=["1280x720", "1400x900"])
def test_presenter_mode_turned_on_from_the_sidebar_folds_it_and_cuts_no_button(
    server, browser, size
):
    """Issue 65: someone opened the sidebar once (Streamlit keeps that in the browser, over
    the page's own initial_sidebar_state); presenter mode turned on from its toggle left it
    open, and the tour's Previous button read "Previ...". A context of its own: the browser's
    storage would follow the module's tab."""
    context = browser.new_context(viewport={"width": size[0], "height": size[1]})
    try:
        page = open_link(context.new_page(), server + "/tour?step=1", size)
        sidebar = page.locator(SIDEBAR)
        sidebar.hover()  # its close button shows under the pointer
        page.locator('[data-testid="stSidebarCollapseButton"] button').click()
        expect(sidebar).to_have_attribute("data-collapsed", "true")
        page.locator('[data-testid="stExpandSidebarButton"]').click()
        expect(sidebar).to_have_attribute("data-collapsed", "false")
        sidebar.get_by_text("Presenter mode").click()
        expect(page).to_have_url(re.compile(r"present=1"))
        wait_rendered(page)
        expect(sidebar).to_have_attribute("data-collapsed", "true")
        expect(page.get_by_role("button", name="Leave presenter mode")).to_be_visible()
        page.wait_for_timeout(300)  # the main area takes the sidebar's width
        assert page.evaluate(CUT_BUTTONS) == []
        page.screenshot(path=str(ARTIFACTS / f"present-toggled-{size[0]}x{size[1]}.png"))
        # and the presenter can open it again to lead (its expand control was 0 px wide):
        # the room's panel is there, and the tour's buttons still fit beside it
        page.locator('[data-testid="stExpandSidebarButton"]').click()
        expect(sidebar).to_have_attribute("data-collapsed", "false")
        expect(sidebar.get_by_text("Lead or follow the room")).to_be_visible()
        page.wait_for_timeout(300)
        assert page.evaluate(CUT_BUTTONS) == []
    finally:
        context.close()


def test_a_server_on_every_interface_shares_links_with_its_network_address(browser):
    """Issue 65: started with --server.address 0.0.0.0 and opened at 127.0.0.1, the share link
    named 127.0.0.1 and said only this machine could open it. It names this machine's network
    address as Streamlit finds it (its "Network URL"), with the server's port. The test opens
    nothing but 127.0.0.1."""
    from streamlit import net_util

    env = {k: "" for k in ("PMAPVIZ_DEVICES", "PMAPVIZ_PLATFORM")}
    proc, url = start_server(["--devices", "2"], env=env, address="0.0.0.0")
    ip = net_util.get_internal_ip()
    expected = f"http://{ip if ip and not ip.startswith('127.') else '127.0.0.1'}"
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = open_link(context.new_page(), url + "/collectives?c=psum")
        page.get_by_role("button", name="Share this view").click()
        body = page.locator('[data-testid="stPopoverBody"]').filter(has_text="reproduces")
        link = body.locator('[data-testid="stCode"]').first
        expect(link).to_contain_text("/collectives?c=psum")
        port = urlsplit(url).port
        assert link.inner_text().strip().startswith(f"{expected}:{port}/collectives?"), ip
        expect(body).not_to_contain_text("Only this machine can open this link")
        page.screenshot(path=str(ARTIFACTS / "share-link-every-interface.png"))
    finally:
        context.close()
        stop_server(proc)


# Home is served at "/" (its url_path names it in the registry; /home is "Page not found").
# Some pages are checked where another test reaches them: the explorer's, opened from a link in
# presenter mode at 1280x720 by test_presenter_mode_at_1280x720; and, by clicking as a presenter
# does, the tour's steps, Collectives, the Timing lab and Home
# (tests/e2e/test_presenter_walk_e2e.py's walk, WALKED there).
PRESENTER_PAGES = [f"/{p.url_path}" for p in PAGES[1:] if p.url_path not in ("explorer", *WALKED)]


# long walks (tests/rotation.py), a part of the views a run: every run checks presenter mode
# at 1280x720 (above) and draws every page (test_every_page_renders_...)
@pytest.mark.parametrize(
    "view", [pytest.param(v, marks=pytest.mark.rotates(cpu_s=2.4)) for v in PRESENTER_PAGES]
)
def test_presenter_mode_shows_a_picture_in_the_first_screen(server, tab, view):
    """Every page, opened from a link in presenter mode."""
    picture_first(open_link(tab, server + view + "?present=1", size=(1280, 720)), view)
