"""The explorer's presets: each is a valid scenario for any device count, with its sizes."""

import math

import pytest

from pmapviz.core.planning import seedpairs
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
        assert s.shapes[0] == f"{n}, {seedpairs.split(n).block:_}, 3"


@pytest.mark.parametrize("n", [1, 3, 8, 7])
def test_the_seed_presets_label_counts_the_pairs_its_shapes_hold(n):
    """10M where the devices divide them; else the pairs the shapes really hold."""
    seed = presets.BY_KEY["seed"]
    _, plan, _ = seed.scenario(n).plan(n)
    held = math.prod(plan.leaves[0].shape[:-1])
    label = seed.label_for(n)
    assert label == ("10M pairs, reshaped" if held == 10_000_000 else f"{held:,} pairs, reshaped")
    assert presets.BY_KEY["seed_noreshape"].label_for(n) == "10M pairs, no reshape"


def test_keys_are_unique():
    assert len(presets.BY_KEY) == len(presets.PRESETS)
