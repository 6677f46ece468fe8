"""The explorer in a real browser: the seed's setting, the fix button, and share links."""

import re

import pytest
from playwright.sync_api import expect

from harness import DIAGRAMS, E2E_DEVICES, EXCEPTIONS, MAIN, screenshot, wait_rendered

pytestmark = pytest.mark.e2e
N = E2E_DEVICES
BLOCK = f"{10_000_000 // N:_}"


def field(page, label):
    return page.get_by_label(label, exact=True)


# a long walk (tests/rotation.py): every run draws the seed in AppTest
# (tests/pages/test_explorer.py) and the explorer from a link in Chromium (test_share_and_present)
@pytest.mark.rotates(cpu_s=6)
def test_seed_setting_screenshot(server, page):
    page.goto(f"{server}/explorer?fn=batched_dot&s0={N},{BLOCK},3&s1={N},{BLOCK},3")
    main = page.locator(MAIN)
    expect(main).to_contain_text(f"uses {N} of the {N} devices")
    expect(main).to_contain_text(f"({N}, {BLOCK})")
    wait_rendered(page)
    expect(page.locator(DIAGRAMS)).to_have_count(3)
    # the hover survives Streamlit's HTML sanitiser: device 0's block names its exact slice
    tip = page.locator(DIAGRAMS).first.locator("[title]").first
    expect(tip).to_have_attribute("title", re.compile(r"holds x\[0:1, :, :\]"))
    expect(tip).to_have_attribute("title", re.compile(re.escape(f"local shape ({BLOCK}, 3)")))
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "explorer-seed")


def test_forgotten_reshape_then_fix_button(server, page):
    page.goto(f"{server}/explorer?fn=batched_dot&s0=10000000,3&s1=10000000,3")
    expect(page.locator(MAIN)).to_contain_text(f"has 10,000,000 elements but there are {N} devices")
    wait_rendered(page)
    screenshot(page, "explorer-noreshape")
    page.get_by_role("button", name="Apply: reshape").click()
    expect(page.locator(MAIN)).to_contain_text("Valid.")
    expect(field(page, "shape of x")).to_have_value(f"{N}, {BLOCK}, 3")
    expect(page).to_have_url(re.compile(rf"s0={N}(%2C\+|%2C%20){BLOCK}%2C(\+|%20)3"))
    wait_rendered(page)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


# a long walk (tests/rotation.py): every run, every page's share link reproduces its view
# in Chromium (tests/e2e/test_share_and_present_e2e.py)
@pytest.mark.rotates(cpu_s=12)
def test_share_link_reproduces_settings(server, page, browser):
    page.goto(f"{server}/explorer")
    wait_rendered(page)
    page.get_by_role("button", name="Broadcast weights (None)").click()
    expect(page).to_have_url(re.compile(r"fn=matmul"))
    wait_rendered(page)
    link = page.url
    other = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
    try:
        other.goto(link)
        expect(field(other, "shape of w")).to_have_value("5, 2")
        expect(field(other, "in_axes of w")).to_have_value("None")
        expect(other.locator(MAIN)).to_contain_text(f"({N}, 4, 2)")
    finally:
        other.context.close()


def test_an_edit_redraws_only_the_settings_and_the_results(server, fresh_page):
    """What the server sends the browser for one edit, read off the websocket: elements of
    the explorer's fragment only (the new shape among them), nothing for the sidebar, the
    title or the preset buttons."""
    page = fresh_page
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    frames = []
    page.on("websocket", lambda ws: ws.on("framereceived", lambda f: frames.append(f)))
    page.goto(f"{server}/explorer?fn=double")
    wait_rendered(page)
    frames.clear()
    box = field(page, "shape of x")
    box.fill(f"{N}, 5")
    box.press("Enter")
    expect(page.locator(MAIN)).to_contain_text(f"({N}, 5)")
    wait_rendered(page)
    msgs = [ForwardMsg.FromString(f) for f in frames if isinstance(f, bytes)]
    deltas = [m for m in msgs if m.WhichOneof("type") == "delta"]
    elements = [m.delta.new_element for m in deltas if m.delta.WhichOneof("type") == "new_element"]
    texts = " ".join(str(e) for e in elements)
    assert f"({N}, 5)" in texts and "text_input" in texts  # the settings and the new results
    assert {m.metadata.delta_path[0] for m in deltas} == {0}  # main only: the sidebar (1) rests
    assert "Shapes & sharding" not in texts and "Start from an example" not in texts
    assert not any(e.WhichOneof("type") == "button" for e in elements)  # the presets rest


def test_the_share_link_follows_edits_made_in_the_pages_fragment(server, page):
    """An edit reruns only the explorer's fragment, which cannot write to the sidebar; the
    sidebar's share link, drawn when opened, still has the edited settings."""
    page.goto(f"{server}/explorer?fn=double")
    wait_rendered(page)
    box = field(page, "shape of x")
    box.fill(f"{N}, 7")
    box.press("Enter")
    expect(page).to_have_url(re.compile(rf"s0={N}%2C\+7(&|$)"))
    expect(page.locator(MAIN)).to_contain_text(f"({N}, 7)")
    wait_rendered(page)
    page.get_by_role("button", name="Share this view").click()
    link = page.locator('[data-testid="stPopoverBody"] [data-testid="stCode"]')
    expect(link).to_contain_text(f"s0={N}%2C+7", timeout=30_000)
    expect(link).to_contain_text("fn=double")
    expect(page.locator(EXCEPTIONS)).to_have_count(0)


# a long walk (tests/rotation.py): every run plans dict arguments and prefixes in AppTest
# (tests/pages/test_explorer.py)
@pytest.mark.rotates(cpu_s=8)
def test_a_parameter_dict_with_an_in_axes_prefix(server, page):
    """jax-ml/jax#9933 in the browser: a dict argument, one leaf split and one replicated;
    every leaf is drawn, and a prefix that does not fit is explained, never a traceback."""
    from urllib.parse import urlencode

    query = {
        "fn": "expr",
        "args": "x, params",
        "body": "jnp.tanh(x @ params['w'] + params['b'])",
        "s0": f"{N}, 4, 5",
        "s1": f"{{'w': (5, 2), 'b': ({N}, 2)}}",
        "a0": "0",
        "a1": "{'w': None, 'b': 0}",
        "out": "0",
    }
    page.goto(f"{server}/explorer?{urlencode(query)}")
    main = page.locator(MAIN)
    expect(main).to_contain_text(f"uses {N} of the {N} devices")
    expect(main).to_contain_text("params['b']")
    wait_rendered(page)
    expect(page.locator(DIAGRAMS)).to_have_count(4)  # x, two leaves, out
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
    screenshot(page, "explorer-pytree")
    wrong = urlencode({**query, "a1": "{'w': None}"})
    page.goto(f"{server}/explorer?{wrong}")
    expect(main).to_contain_text(
        "in_axes for params is a dict with keys 'w', but params is a dict with keys"
    )
    wait_rendered(page)
    expect(page.locator(EXCEPTIONS)).to_have_count(0)
