"""The browser store: a cookie written by our own inline component, read back on a later
session's first run; only server-made tokens are written or read."""

import json

import pytest

from pmapviz.core.ui import browser_store
from tests.core.ui.conftest import render


def _store(name: str, value: str, age: float) -> None:
    from pmapviz.core.ui import browser_store

    browser_store.keep(name, value, age, key="k")


def _written(at) -> dict:
    (element,) = at.get("bidi_component")
    assert element.proto.component_name == browser_store.NAME
    assert element.proto.js_content == browser_store.WRITE_JS  # our constant, nothing else
    assert not element.proto.html_content
    return json.loads(element.proto.json)


def test_keeping_a_token_sends_it_as_data_to_the_constant_script():
    at = render(_store, "pmapviz_lead_8501", "tok-EN_123", 3600.7)
    assert not at.exception
    assert _written(at) == {"name": "pmapviz_lead_8501", "value": "tok-EN_123", "max_age": 3600}


def test_forgetting_writes_an_empty_cookie_that_expires_at_once():
    at = render(_store, "pmapviz_lead_8501", "", 3600)
    assert _written(at) == {"name": "pmapviz_lead_8501", "value": "", "max_age": 0}


@pytest.mark.parametrize(
    ("name", "value"),
    [("a b", "x"), ("", "x"), ("n", "x;Path=/evil"), ("n", "<script>"), ("n", "x" * 129)],
)
def test_nothing_but_a_short_url_safe_token_is_written(name, value):
    with pytest.raises(ValueError, match="URL-safe token"):
        browser_store.keep(name, value, 60, key="k")


def test_the_script_builds_no_markup_and_is_strict():
    js = browser_store.WRITE_JS
    assert "innerHTML" not in js and "eval" not in js and "SameSite=Strict" in js
    assert "Path=/" in js and "Secure" in js


@pytest.mark.parametrize(
    ("cookies", "read"),
    [
        ({"pmapviz_lead_8501": "tok-EN_123"}, "tok-EN_123"),
        ({}, None),
        ({"pmapviz_lead_8501": ""}, None),
        ({"pmapviz_lead_8501": "<b>x</b>"}, None),  # not a token this module could write
        ({"pmapviz_lead_8501": "x" * 500}, None),
        ({"other": "tok"}, None),
    ],
)
def test_only_a_token_it_could_have_written_is_read_back(monkeypatch, cookies, read):
    monkeypatch.setattr(browser_store.st, "context", type("C", (), {"cookies": cookies}))
    assert browser_store.read("pmapviz_lead_8501") == read


def test_each_server_port_has_a_cookie_of_its_own(monkeypatch):
    monkeypatch.setattr(browser_store.st, "get_option", lambda key: 8600)
    assert browser_store.cookie_name("pmapviz_lead") == "pmapviz_lead_8600"
