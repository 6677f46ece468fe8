"""The seed's example drawn: shapes, checks, timings, each device's block, two mistakes."""

from pmapviz.features.live import dotproduct
from tests.core.ui.conftest import render


def _dot(res):
    from pmapviz.features.live.ui import dot_result

    dot_result.show(res)


def test_the_result_says_the_reshape_back_equals_vmap_and_warns_of_both_mistakes():
    res = dotproduct.run_dot(4_000, 4, repeat=1)
    at = render(_dot, res)
    assert not at.exception
    assert "(4, 1000)" in at.markdown[0].value.replace("_", "")
    assert any("the values equal jit(vmap(dot))" in m.value for m in at.markdown)
    assert len(at.table) == 1 and len(at.expander) == 2
    assert at.warning[0].value == res.forgot_reshape_message and not at.error  # a lesson
    assert "--pairs 4000 --devices 4" in at.caption[-1].value
