"""Every program pmapviz knows, by name and from settings, on this process's devices; settings
that make none refused with a fix."""

import pytest

from pmapviz.features.types import typedcatalog, typedprogram, typesettings
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


@pytest.mark.parametrize("name", typedcatalog.NAMES)
def test_every_named_program_types_in_explicit_mode(name):
    view = typedprogram.typed(typedcatalog.named(name, N), "manual")
    assert view.error is None, view.error
    assert view.rows and view.rows[0].eqn.primitive == "shard_map"
    assert all(t for r in view.rows for t in r.eqn.out_types)


def test_the_seed_and_training_are_what_their_pages_run():
    seed = typedprogram.typed(typedcatalog.named("seed", N), "explicit")
    pairs = 10_000_000 // N
    assert seed.in_types == (f"f32[{N}@i,{pairs},3]",) * 2 and seed.out_types == (
        f"f32[{N}@i,{pairs}]",
    )
    train = typedprogram.typed(typedcatalog.named("training", N), "manual")
    assert [c.kind for c in train.collectives] == ["all-reduce"]  # pmean of the gradients
    assert train.mesh.names == ("batch",)


def _values(**changes):
    schema = typesettings.schema(N)
    texts = {**schema.defaults(), **changes}
    values, errors = schema.parse(texts)
    assert not errors
    return values, texts


def test_settings_that_make_no_program_say_why_and_how_to_fix_it():
    cases = [
        ({"mesh": f"2x{N}"}, f"has {2 * N} devices and this server {N}"),
        ({"ms0": "5, 16"}, "does not divide 5"),
        ({"gf": "x @@ w"}, "Fix: edit that expression"),
        ({"margs": "x, w, b"}, "f takes 3 argument(s) and 2 shape(s) are given"),
        ({"prog": "training", "batch": str(N + 1)}, f"does not split evenly over {N} devices"),
        ({"prog": "explorer", "fn": "add", "s0": "3, 4"}, "Fix:"),
    ]
    for changes, words in cases:
        values, texts = _values(**changes)
        with pytest.raises(typedcatalog.Refused) as err:
            typedcatalog.from_values(values, texts, N)
        assert any(words in m for m in err.value.messages), (changes, err.value.messages)
    with pytest.raises(typedcatalog.Refused, match="no program pmapviz knows"):
        typedcatalog.named("<b>", N)


def test_an_explorer_link_s_settings_make_its_pmap():
    values, texts = _values(prog="explorer", fn="normalise", name="i", s0=f"{N}, 4")
    source = typedcatalog.from_values(values, texts, N)
    assert source.mesh.shape == (N,) and "x / lax.psum(jnp.sum(x), 'i')" in source.label
    assert source.key[0] == "explorer"
