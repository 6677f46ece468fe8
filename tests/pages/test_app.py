"""AppTest for the router, the device panel and every page."""

import re

import pytest

from pmapviz.app.page_registry import PAGES
from pmapviz.app.ui import page_check
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import devicefacts, jaxstartup
from tests.conftest import TEST_DEVICES
from tests.pages.conftest import all_text


@pytest.mark.parametrize("info", PAGES, ids=[p.url_path for p in PAGES])
def test_every_page_renders_with_device_panel(run_app, info):
    at = run_app(page=info.path)
    assert not at.exception, [e.value for e in at.exception]
    sidebar = "\n".join(m.value for m in at.sidebar.markdown)
    assert f"{TEST_DEVICES} devices" in sidebar
    for k in range(TEST_DEVICES):
        assert f"cpu:{k}" in sidebar
    assert "fixed for this server process" in sidebar
    assert at.sidebar.code[0].value.endswith(f"streamlit run app.py -- --devices {TEST_DEVICES}")
    assert "Not built yet" not in all_text(at)  # every page is built


def test_restart_command_follows_the_chosen_count(run_app):
    at = run_app()
    at.sidebar.number_input(key="restart_devices").set_value(2).run()
    assert at.sidebar.code[0].value.endswith("streamlit run app.py -- --devices 2")
    assert not at.exception


@pytest.mark.parametrize(
    "argv, env, expected",
    [
        (["--devices", "0"], {}, "at least 1"),
        (["--devices", "-3"], {}, "-3 devices"),
        (["--devices", "eight"], {}, "not a whole number"),
        (["--devices", "1e9"], {}, "not a whole number"),
        (["--devices", "100000"], {}, f"at most {jaxstartup.MAX_DEVICES}"),
        (["--platform", "quantum"], {}, "not a known platform"),
        ([], {"PMAPVIZ_DEVICES": "eight"}, "PMAPVIZ_DEVICES"),
    ],
)
def test_bad_settings_show_a_message_not_a_traceback(run_app, argv, env, expected):
    at = run_app(argv=argv, env=env)
    assert not at.exception
    assert at.title[0].value == "pmapviz could not start"
    assert expected in at.error[0].value
    assert "run app.py -- --devices 8" in at.code[0].value


def test_panel_admits_a_count_it_could_not_apply(run_app):
    """JAX in this process already has TEST_DEVICES devices; asking for 3 must be flagged."""
    original = jaxstartup.applied_settings()
    try:
        at = run_app(argv=["--devices", "3", "--platform", "cpu"])
        assert not at.exception
        warnings = [w.value for w in at.sidebar.warning]
        assert any(
            "Asked for 3 emulated CPU devices" in w and f"with {TEST_DEVICES}" in w
            for w in warnings
        )
    finally:
        jaxstartup.apply(original)


def grid_rows(markup: str) -> dict[str, list[str]]:
    """Parse ui.block_grid HTML back into {row label: [cell texts]}."""
    cells = re.findall(r"<div[^>]*>((?:(?!<div).)*?)</div>", markup)
    n = markup.count("<div title=") // max(1, markup.count("font-weight:600"))
    rows, k = {}, 0
    while k < len(cells):
        rows[cells[k]] = [re.sub("<[^>]+>", " ", c).strip() for c in cells[k + 1 : k + 1 + n]]
        k += 1 + n
    return rows


def test_home_hello_pmap_comes_from_real_shards(run_app):
    at = run_app()
    grid = next(m.value for m in at.markdown if "y = x * 2" in m.value)
    rows = grid_rows(grid)
    assert rows["device"] == [f"cpu:{k}" for k in range(TEST_DEVICES)]
    assert rows["x"] == [str(k) for k in range(TEST_DEVICES)]
    assert rows["y = x * 2"] == [str(2 * k) for k in range(TEST_DEVICES)]
    assert rows["slice"] == [f"[{k}:{k + 1}]" for k in range(TEST_DEVICES)]


def test_home_draws_every_device_in_the_device_set(run_app):
    at = run_app()
    grid = next(m.value for m in at.markdown if "process 0</small>" in m.value)
    for k in range(TEST_DEVICES):
        assert f"<b>cpu:{k}</b>" in grid


def test_home_links_every_other_page(run_app):
    at = run_app()
    links = at.get("page_link")
    targets = {link.proto.page for link in links}
    for info in PAGES[1:]:
        assert any(info.path.split("/")[-1] in t or info.url_path in t for t in targets), targets


def test_an_unforeseen_error_shows_one_message_and_the_type_only(run_app, monkeypatch):
    """The router's last resort: no traceback, no server path, the page's type of error in a
    collapsed 'Details', and the sidebar still works."""
    from pmapviz.features.home import pmapdemos

    def broken(*_a, **_k):
        raise RuntimeError("secret /srv/pmapviz/pmapviz/core/running/pmaprun.py detail")

    monkeypatch.setattr(pmapdemos, "run_hello", broken)
    at = run_app()
    assert not at.exception
    assert any("unexpected problem" in e.value for e in at.error)
    text = all_text(at) + " ".join(e.label for e in at.expander)
    assert "RuntimeError" in " ".join(c.value for c in at.code)
    assert "secret" not in text and "/srv/" not in text and "Traceback" not in text
    assert f"{TEST_DEVICES} devices" in "\n".join(m.value for m in at.sidebar.markdown)


@pytest.mark.parametrize("platform", ["gpu", "tpu"])
@pytest.mark.parametrize("info", PAGES, ids=[p.url_path for p in PAGES])
def test_every_page_on_a_gpu_or_tpu_server_tells_its_story_not_the_cpus(
    run_app, fake_devices, info, platform
):
    """Rendered as a GPU server (fake H200s) and as a TPU server (fake v5e chips): labels,
    platform, kind and memory come from the device objects, both budgets are in the sidebar,
    and no page claims emulated devices, shared cores or CPU-only advice. A page that
    hard-codes the CPU story fails here."""
    with fake_devices(platform) as devs:
        at = run_app(page=info.path, query={"on": platform})
        facts = devicefacts.facts(platform)
    assert not at.exception, [e.value for e in at.exception]
    sidebar = "\n".join(m.value for m in at.sidebar.markdown)
    assert str(devs[0]) in sidebar and f"`{platform}` (real)" in sidebar
    assert "`cpu` (emulated)" in sidebar  # the emulated set beside, told apart
    assert at.get("button_group")[0].value == platform  # the picker: this page's set
    captions = "\n".join(c.value for c in at.sidebar.caption)
    assert "Device memory budget for the whole server" in captions
    assert "Host memory budget" in captions
    assert at.sidebar.code[0].value.endswith(f"streamlit run app.py -- --devices {TEST_DEVICES}")
    assert at.query_params["on"] == platform
    main = all_text(at).replace(sidebar, "")
    said = page_check.cpu_words([main], facts, info.path)  # the cluster's workers' code aside
    assert not said, said


def test_the_gpu_story_reaches_the_words_that_matter(run_app, fake_devices):
    """The Timing lab's story, the tour's first step and the exported script on GPUs."""
    with fake_devices("gpu"):
        timing = run_app(page=page_file("timing"))
        tour = run_app(page=page_file("tour"), query={"step": "1", "on": "gpu"})
    assert "8 NVIDIA H200 GPUs, real devices" in all_text(timing)
    assert "should speed it up" in all_text(timing)
    assert tour.header[0].value == "1. Your GPU devices"
    assert "two device sets at once" in all_text(tour)


def test_collectives_grid_uses_the_reported_labels(run_app, fake_devices):
    with fake_devices("tpu"):
        at = run_app(page=page_file("collectives"), query={"c": "psum", "n": "4", "m": "1"})
    grid = " ".join(m.value for m in at.markdown if "grid" in m.value)
    assert all(f">TPU_{d}(" in grid for d in range(4)) and "cpu:" not in grid


def test_a_fresh_process_first_chart_never_meets_a_half_imported_pandas():
    """The one import rule (issue 52): Home, then the Collectives page's first chart, in a
    process of their own. With pandas imported by a background warm-up after Home, Plotly
    read a half-imported pandas there ("partially initialized module 'pandas'"): 3 runs of 3
    failed. Now pandas is whole before any page code runs."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    code = (
        "import os, sys\n"
        "from streamlit.testing.v1 import AppTest\n"
        f"os.environ['PMAPVIZ_DEVICES'] = '{TEST_DEVICES}'\n"
        "sys.argv = ['app.py']\n"
        "at = AppTest.from_file(os.path.abspath('app.py'), default_timeout=120).run()\n"
        "was = 'pandas' in sys.modules\n"
        "at.query_params.update(c='ppermute', m='4')\n"
        "at.switch_page('pages/collectives.py').run()\n"
        "print(was, len(at.exception), len(at.error), [e.value for e in at.error])\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip().splitlines()[-1] == "True 0 0 []"
