"""The Compiled page's hidden communication: nothing compiles until the button asks."""

from tests.core.ui.conftest import render


def _hidden():
    from pmapviz.features.compiled.ui import hidden_view

    hidden_view.show(2)


def test_hidden_communication_waits_for_its_button():
    at = render(_hidden)
    assert at.subheader[0].value == "Hidden communication" and not at.dataframe
    at.button(key="cp_hidden").click().run()
    assert not at.exception and len(at.dataframe[0].value) >= 1
