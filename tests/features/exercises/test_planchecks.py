"""The checks read from a plan, each on its own: the explorer's planner on the attempt, JAX's
own exception for the real call where it refuses, and a rule that names the exercise's own
numbers only."""

import pytest

from pmapviz.core.base import valueparse
from pmapviz.features.exercises import planchecks
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def test_fit_devices_takes_any_reshape_that_keeps_the_elements_and_fits():
    for shape in ((5, 2, 3), (2, 5, 3), (1, 10, 3), (10, 1, 3)[1:] + (10,)):
        judged = planchecks.fit_devices({"shape": shape}, N)
        if shape[0] <= N and shape[0] * shape[1] * (shape[2] if len(shape) > 2 else 1) == 30:
            assert judged.solved, shape


def test_fit_devices_refuses_the_steps_mistake_with_jaxs_words_and_its_own_numbers():
    judged = planchecks.fit_devices({"shape": (N + 2, 3)}, N)
    assert not judged.solved and judged.checked
    assert judged.kind == f"IndivisibleError (mapped axis {N + 2} > {N} devices)"
    assert "IndivisibleError" in judged.said and f"{N + 2}" in judged.words


def test_a_typed_size_never_reaches_the_rule():
    """The rule names a mapped size only where it is the exercise's own: 1337 rows typed are
    the attendee's, and the room's count says 'mapped axis > 8 devices'."""
    judged = planchecks.fit_devices({"shape": (1337, 3)}, N)
    assert "1337" not in judged.kind and "x must keep its 30 elements" in judged.kind
    too_long = planchecks.fit_devices({"shape": (30, 1)}, N)
    assert too_long.kind.endswith(f"(mapped axis > {N} devices)") and "30" not in too_long.kind
    assert "30" in too_long.words  # the attendee's own page says it


def test_fit_devices_wants_an_axis_and_every_element():
    assert planchecks.fit_devices({"shape": ()}, 1).kind.startswith("WrongResult")
    assert "elements" in planchecks.fit_devices({"shape": (2, 3)}, N).kind


@pytest.mark.parametrize("axis, solved", [(None, True), (0, False), (1, False), (-1, False)])
def test_broadcast_w_wants_w_whole_on_every_device(axis, solved):
    judged = planchecks.broadcast_w({"axis": axis}, N)
    assert judged.solved is solved
    if not solved:
        assert judged.kind and judged.words


def test_broadcast_w_refuses_a_split_that_pmap_takes_but_gives_another_result():
    """On 5 devices in_axes 0 maps w's 5 rows: pmap's sizes agree, f refuses the blocks."""
    assert not planchecks.broadcast_w({"axis": 0}, 5).solved
    assert planchecks.broadcast_w({"axis": None}, 5).solved


def test_rows_follow_the_devices():
    assert [planchecks.rows_of(n) for n in (1, 3, 8)] == [3, 5, 10]
    assert valueparse.parse_shape("10, 3") == (10, 3)
