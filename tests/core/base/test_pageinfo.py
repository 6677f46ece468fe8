"""A page's record: the keys its link is read through, from its schemas alone."""

import dataclasses

import pytest

from pmapviz.core.base import settings
from pmapviz.core.base.pageinfo import PageInfo, no_settings, page_file


def _schema(*keys: str) -> settings.Schema:
    return settings.Schema(tuple(settings.choice_field(k, k, ("a", "b"), "a") for k in keys))


def test_keys_follow_the_schemas_in_order_once_each():
    page = PageInfo(
        page_file("x"),
        "X",
        ":material/home:",
        "x",
        "x",
        schemas=lambda n: (_schema("c", "n"), _schema("n", "src")),
    )
    assert page.keys() == ("c", "n", "src") and page.keys(3) == page.keys(64)


def test_a_page_without_settings_reads_no_key_and_runs_on_many_devices():
    page = PageInfo(page_file("x"), "X", ":material/home:", "x", "x")
    assert page.schemas is no_settings and page.keys() == () and page.runs_on == "many"
    assert page.checks == (({}, ()),)  # opened once, nothing pressed
    with pytest.raises(dataclasses.FrozenInstanceError):
        page.title = "Y"  # a record, shared by every session
