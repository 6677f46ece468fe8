"""Home's prose: what pmap does and when to use it, with the device honesty line."""

import pytest

from pmapviz.core.devices import devicewords
from pmapviz.core.planning import seedpairs
from pmapviz.core.ui.shell import device_report
from pmapviz.features.home.ui import pmap_intro
from tests.core.ui.conftest import render


def _intro(facts):
    from pmapviz.features.home.ui import pmap_intro

    pmap_intro.show(facts)


def test_two_columns_what_pmap_does_and_when_to_use_it():
    facts = device_report().facts
    at = render(_intro, facts)
    assert [s.value for s in at.subheader] == ["What pmap does", "When to use it, today"]
    assert "**Replicate**" in at.markdown[0].value
    assert at.markdown[0].value.strip() == pmap_intro.what_pmap_does(len(facts.devices)).strip()
    assert devicewords.say(facts, "honesty") in at.markdown[1].value


@pytest.mark.parametrize("n", [1, 3, 8])
def test_the_examples_are_written_in_this_device_counts_numbers(n):
    """The input example fits n devices and the seed's reshape is the one for n devices
    (seedpairs: the pairs that split evenly, and what is left out, said)."""
    text = pmap_intro.what_pmap_does(n)
    split = seedpairs.split(n)
    assert f"`({n}, 128)` shows `f` a\n   `(128,)` value" in text
    assert split.reshape_words() in text and f"({n} here)" in text
    assert ("take the first" in text) == bool(split.left_over)
