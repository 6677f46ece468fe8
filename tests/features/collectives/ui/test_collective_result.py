"""One collective run for real: before and after on every device, where each piece came from
or what each result combines, and the communication it costs."""

from tests.core.ui.conftest import render
from tests.features.collectives.test_collectivegrids import outcome


def _show(out, choice):
    from pmapviz.core.ui.shell import device_report
    from pmapviz.features.collectives.ui import collective_result

    collective_result.show(out, choice, 2, device_report(), None)


def test_ppermute_draws_its_pairs_and_says_who_receives_zeros():
    out, choice = outcome("ppermute", perm="0->1")
    at = render(_show, out, choice)
    assert not at.exception
    assert "x: (4, 2)" in at.code[0].value and len(at.get("plotly_chart")) == 1
    assert "[0, 2, 3]" in at.info[0].value and "**Communication**" in at.markdown[-1].value
