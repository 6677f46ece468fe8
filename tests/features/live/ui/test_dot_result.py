"""The seed's example drawn: shapes, checks, timings, each device's block, two mistakes."""

import pytest

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
    assert len(at.table) == 1 and len(at.expander) == 3  # two mistakes, JAX's words in one
    assert at.warning[0].value == res.forgot_reshape_message and not at.error  # a lesson
    assert "--pairs 4000 --devices 4" in at.caption[-1].value


def _real_forgotten_reshape(pairs: int, n: int) -> str:
    """The real un-reshaped call's exception, as a traceback's last line."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from pmapviz.core.devices import devicefacts
    from pmapviz.core.running import jaxsays

    x = np.zeros((pairs, 3), np.float32)
    devs = devicefacts.local_devices_for_work()[:n]
    try:
        jax.pmap(jax.vmap(jnp.dot), devices=devs)(x, x)
    except Exception as err:  # noqa: BLE001 -- what JAX says is what the page must show
        return jaxsays.said(err).text
    raise AssertionError("the un-reshaped call ran")


@pytest.mark.parametrize("n", [1, 4])
def test_the_forgotten_reshape_shows_jaxs_own_error_after_the_explanation(n):
    """The explanation and the reshape first; then, collapsed, the very error the real
    un-reshaped call raises on these devices (on one device too: 4,000 rows > 1 device)."""
    res = dotproduct.run_dot(4_000, n, repeat=1)
    real = _real_forgotten_reshape(4_000, n)
    assert res.forgot_reshape_jax == real and real.startswith("ValueError: ")
    at = render(_dot, res)
    outer = next(e for e in at.expander if e.label == "If you forget the reshape")
    (inner,) = [e for e in outer.expander if e.label.startswith("What JAX itself says")]
    assert inner.label == "What JAX itself says: ValueError" and not inner.proto.expanded
    assert [c.value for c in inner.code] == [real]
    words = outer.markdown[0].value
    assert f"may have at most {n} entr" in words and f"x has 4,000. Reshape to ({n}, " in words
    assert "cryptic" not in words and "with the error below" in words
