"""Home's prose: what pmap does and when to use it, with the device honesty line."""

from pmapviz.core.devices import devicewords
from pmapviz.core.ui.shell import device_report
from tests.core.ui.conftest import render


def _intro(facts):
    from pmapviz.features.home.ui import pmap_intro

    pmap_intro.show(facts)


def test_two_columns_what_pmap_does_and_when_to_use_it():
    facts = device_report().facts
    at = render(_intro, facts)
    assert [s.value for s in at.subheader] == ["What pmap does", "When to use it, today"]
    assert "**Replicate**" in at.markdown[0].value
    assert devicewords.say(facts, "honesty") in at.markdown[1].value
