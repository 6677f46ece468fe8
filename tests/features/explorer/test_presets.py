"""The explorer's presets: each is a valid scenario for any device count, with its sizes."""

import pytest

from pmapviz.core.planning.scenarios import Scenario
from pmapviz.features.explorer import presets


@pytest.mark.parametrize("n", [1, 3, 8, 64])
@pytest.mark.parametrize("preset", presets.PRESETS, ids=[p.key for p in presets.PRESETS])
def test_every_preset_is_a_parseable_scenario(preset, n):
    s = preset.scenario(n)
    assert isinstance(s, Scenario) and s.fn == preset.fn
    assert s.out == preset.out_axes and s.name == preset.axis_name
    program, plan, errors = s.plan(n)
    assert not errors and plan is not None
    if preset.key == "seed":
        assert s.shapes[0] == f"{n}, {10_000_000 // n:_}, 3"


def test_keys_are_unique():
    assert len(presets.BY_KEY) == len(presets.PRESETS)
