"""Hello, pmap: run on every device, each device's x and x * 2 from the output's shards."""

from tests.conftest import TEST_DEVICES
from tests.core.ui.conftest import render


def _hello(n):
    from pmapviz.features.home.ui import hello_pmap

    hello_pmap.show(n, None)


def test_every_device_shows_its_x_and_what_it_computed():
    at = render(_hello, TEST_DEVICES)
    assert not at.exception
    grid = next(m.value for m in at.markdown if "role='img'" in m.value)
    assert f"arange({TEST_DEVICES})" in grid and grid.count("title=") >= 2 * TEST_DEVICES
    assert "y.sharding" in at.caption[0].value
    assert f"jnp.arange({TEST_DEVICES})" in at.code[0].value


def test_the_warm_up_runs_it_for_real_outside_a_page():
    import numpy as np

    from pmapviz.features.home.ui import hello_pmap

    hello = hello_pmap.warm(TEST_DEVICES)  # as a server warms, before any session
    assert np.array_equal(hello.values, 2 * np.arange(TEST_DEVICES))
    assert len(hello.outputs) == TEST_DEVICES
