"""The page registry: one record per page, from which the menu, the page checks and every
page's URL keys follow; every key a page reads is in its entry."""

import sys
from pathlib import Path

import pytest
from streamlit.runtime.state.query_params_proxy import QueryParamsProxy
from streamlit.testing.v1 import AppTest

from pmapviz.app import page_registry
from pmapviz.app.page_registry import APP_KEYS, PAGES
from pmapviz.app.ui import page_check
from pmapviz.core.base import room, settings
from pmapviz.core.base.pageinfo import page_file
from pmapviz.core.devices import deviceset
from pmapviz.core.planning import scenarios
from pmapviz.core.ui import url_state
from tests.conftest import ROOT


def test_every_page_has_its_entry_and_home_comes_first():
    assert PAGES[0].url_path == "home"
    assert page_registry.page_info(page_file("tour")).title == "Guided tour"
    assert len({p.url_path for p in PAGES}) == len(PAGES)
    assert page_registry.by_url_path("") is PAGES[0]  # the default page's path is empty
    assert page_registry.by_url_path("meshes").path == page_file("meshes")


def test_the_pages_are_the_features_pages_in_their_declared_order():
    """Each page file belongs to the feature of its name, which declares it (``PAGE``); the
    menu's order is features.ORDER."""
    from pmapviz import features

    with_page = [f for f in features.ORDER if Path(page_file(f)).is_file()]
    assert [p.url_path for p in PAGES] == with_page
    assert [p.path for p in PAGES] == [page_file(f) for f in with_page]
    assert Path(page_file("home")).parent == ROOT / "pages"  # a checkout's: beside app.py


def test_a_pages_keys_are_its_schemas_fields_whatever_the_device_count():
    """The keys come from the schemas the page reads its link through (its features'), the
    same on any device count; the app's own keys (presenter mode, the device set) are apart."""
    explorer = page_registry.page_info(page_file("explorer"))
    assert explorer.keys() == scenarios.KEYS
    assert page_registry.page_info(page_file("live")).keys() == scenarios.KEYS
    assert PAGES[0].keys() == ()
    # the app's keys: presenter mode, the device set, the lead link's token, and every key a
    # session keeps through every page's own link (following the presenter)
    app = {settings.PRESENT_KEY, deviceset.URL_KEY, room.LEAD_KEY}
    assert set(APP_KEYS) == app | url_state.STICKY
    timing = page_registry.page_info(page_file("timing")).keys()
    assert timing[:6] == ("w", "r", "sizes", "ks", "impls", "beside")
    assert set(scenarios.KEYS) <= set(timing)  # it times the explorer's settings
    for p in PAGES:
        assert p.keys(1) == p.keys(3) == p.keys(8), p.path
        assert not set(p.keys()) & set(APP_KEYS), p.path


def _reads(monkeypatch) -> list[str]:
    """Every query key read from here on: each schema a link is read through (its fields),
    and each key looked up in ``st.query_params`` itself."""
    read: list[str] = []
    from_query = settings.Schema.from_query
    getitem = QueryParamsProxy.__getitem__

    def schema_read(self, query):
        read.extend(f.key for f in self.fields)
        return from_query(self, query)

    def key_read(self, key):
        read.append(key)
        return getitem(self, key)

    monkeypatch.setattr(settings.Schema, "from_query", schema_read)
    monkeypatch.setattr(QueryParamsProxy, "__getitem__", key_read)
    return read


@pytest.mark.parametrize("info", PAGES, ids=[p.url_path for p in PAGES])
def test_every_key_a_page_reads_is_in_its_registry_entry(info, monkeypatch):
    """Each page, opened through app.py as a server runs it: every query key it reads (through
    a schema, or by hand) is in its registry entry or the app's, so a new URL field cannot be
    left out of the hostile links, the fuzzers or the share links' checks."""
    for module, name, value in page_check.steady_server_patches():
        monkeypatch.setattr(module, name, value)
    monkeypatch.setattr(sys, "argv", ["app.py"])
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120).run()
    read = _reads(monkeypatch)
    at.switch_page(info.path).run()
    assert not at.exception
    assert read, "the page read no key: the recorder missed it"
    assert not set(read) - {*info.keys(), *APP_KEYS}, (info.path, set(read) - set(info.keys()))
