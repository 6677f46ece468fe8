"""Share links reproduce each page's settings; presenter mode at 1280x720."""

import re

import pytest
from playwright.sync_api import expect

from harness import DIAGRAMS, E2E_DEVICES, EXCEPTIONS, MAIN, screenshot, wait_rendered
from harness.browser import ARTIFACTS
from pmapviz.app.page_registry import PAGES
from pmapviz.features.tour import toursteps

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


@pytest.mark.parametrize("name", sorted(LINKS))
def test_share_link_reproduces_the_view(server, tab, name):
    path, texts, selects = LINKS[name]
    page = open_link(tab, server + path.format(n=N))
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
    # the share control (a lazy popover: its link is drawn when it opens) shows a link to exactly
    # this view
    page.get_by_role("button", name="Share this view").click()
    link = page.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]')
    expect(link).to_contain_text(f"/{name}?", timeout=30_000)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


def test_presenter_mode_at_1280x720(server, tab):
    page = open_link(tab, server + "/explorer?present=1", size=(1280, 720))
    expect(page.locator('[data-testid="stHeader"]')).to_be_hidden()
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


# Home is served at "/" (its url_path names it in the registry; /home is "Page not found").
# Two pages are checked on a load of another test: the explorer's, opened from a link in
# presenter mode at 1280x720 by test_presenter_mode_at_1280x720, and the tour's (its step 1)
# by the tour walk's first step.
PRESENTER_PAGES = [
    "/",
    *(f"/{p.url_path}" for p in PAGES[1:] if p.url_path not in ("explorer", "tour")),
]
TOUR_STEPS = range(1, len(toursteps.STEPS) + 1)


FIRST_PICTURE = """() => {
    const pics = [...document.querySelectorAll('[data-testid="stMain"] [role="img"][aria-label]')]
        .map(p => [p.getBoundingClientRect().top, p.getAttribute('aria-label')])
        .filter(([top]) => top >= 0);
    pics.sort((a, b) => a[0] - b[0]);
    const side = document.querySelector('[data-testid="stSidebar"]');
    return {first: pics[0] || null, count: pics.length,
            sidebar: side ? side.getBoundingClientRect().width : 0,
            sidebarOpen: side ? side.getAttribute('aria-expanded') : null};
}"""


# views whose first screen is the problem their picture answers (issue 53: "the answer came
# before the question"): JAX's own error starts in the first screen, the picture below it
PROBLEM_FIRST = {"/tour?step=4"}


def picture_first(page, view: str) -> None:
    """Issue 26: at 1280x720 in presenter mode the view shows its picture (an element with
    role="img" and an aria-label that says what it shows) starting inside the first screen,
    the sidebar folded away; a view of :data:`PROBLEM_FIRST` shows its problem there instead,
    and its picture after it. A screenshot for the gallery."""
    state = page.evaluate(FIRST_PICTURE)
    assert state["first"] is not None, f"{view}: no picture at all"
    top, label = state["first"]
    if view in PROBLEM_FIRST:
        error = page.locator(MAIN).locator('[data-testid="stCode"]').first
        box = error.bounding_box()
        assert box is not None and box["y"] < 720 < top, (view, box, top)
        assert "Error" in error.inner_text()
    else:
        assert top < 720, f"{view}: the first picture starts at {top:.0f} px: {label}"
    assert len(label) > 20, label  # says what it shows
    assert state["sidebarOpen"] != "true", state  # folded away
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    name = view.strip("/").replace("?step=", "-step-") or "home"
    page.screenshot(path=str(ARTIFACTS / f"present-{name}.png"))


@pytest.mark.parametrize("view", PRESENTER_PAGES)
def test_presenter_mode_shows_a_picture_in_the_first_screen(server, tab, view):
    """Every page, opened from a link in presenter mode."""
    picture_first(open_link(tab, server + view + "?present=1", size=(1280, 720)), view)


def test_presenter_walks_the_tour_with_next_and_each_step_shows_its_picture_first(server, tab):
    """Every tour step, as a presenter reaches it: the first from a link, each next one with
    the Next button (a rerun of the same session, which keeps presenter mode and the step in
    the address)."""
    page = open_link(tab, server + "/tour?step=1&present=1", size=(1280, 720))
    for step in TOUR_STEPS:
        if step > 1:
            page.get_by_role("button", name="Next").click()
            expect(page).to_have_url(re.compile(rf"step={step}(&|$)"))
            expect(page.locator(f"{MAIN} h2").first).to_contain_text(f"{step}. ")
            wait_rendered(page)
        expect(page).to_have_url(re.compile(r"present=1"))
        jump = page.locator(f"{MAIN} input[aria-label='Jump to step']")
        expect(jump).to_have_value(re.compile(rf"^{step}\. "))  # names the step shown
        picture_first(page, f"/tour?step={step}")
