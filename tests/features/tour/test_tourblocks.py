"""A tour step's plain data: its blocks (pictures or words), the server facts it reads, and
links to the full pages that carry their settings."""

import dataclasses
from urllib.parse import parse_qsl, urlparse

import pytest

from pmapviz.core.devices import devicefacts
from pmapviz.features.tour.tourblocks import PICTURES, Context, TourBlock, page_url

WORDS = ("markdown", "code", "lesson", "info", "table", "link", "folded_code")


def test_only_grids_chips_and_cards_are_pictures():
    assert all(TourBlock(kind, None).picture for kind in PICTURES)
    assert not any(TourBlock(kind, "text").picture for kind in WORDS)
    assert set(PICTURES).isdisjoint(WORDS)


def test_blocks_and_contexts_are_frozen_values():
    """Plain data that compares by value, so a page can cache a step's blocks by its context."""
    facts = devicefacts.facts()
    a = Context(2, ("cpu:0", "cpu:1"), facts, "restart")
    assert a == Context(2, ("cpu:0", "cpu:1"), facts, "restart") and hash(a) == hash(
        Context(2, ("cpu:0", "cpu:1"), facts, "restart")
    )
    block = TourBlock("code", "x = 1", "python")
    assert block == TourBlock("code", "x = 1", "python") and TourBlock("info", "x").extra == ""
    with pytest.raises(dataclasses.FrozenInstanceError):
        block.kind = "markdown"


def test_home_is_the_root_and_other_pages_their_path():
    assert page_url("home") == "/"
    assert page_url("timing") == "/timing"


def test_a_links_settings_read_back_as_given():
    url = urlparse(page_url("collectives", c="ppermute", n=4, m=1, p="ring right"))
    assert url.path == "/collectives"
    assert dict(parse_qsl(url.query)) == {"c": "ppermute", "n": "4", "m": "1", "p": "ring right"}
