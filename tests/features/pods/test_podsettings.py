"""The Pods page's settings: its fields and defaults, what a link may hold, and the built-in
program each key gives at a batch."""

from pmapviz.core.pods import podprograms, tpuchips
from pmapviz.features.pods import podsettings


def test_the_schema_holds_the_slice_program_batch_and_generation_with_defaults():
    schema = podsettings.schema(8)
    assert schema.defaults() == {
        "pod": tpuchips.DEFAULT,
        "prog": "psum",
        "batch": "0",
        "gen": "v5e",
        "sprog": "train",
    }
    values, errors = schema.parse(schema.defaults())
    assert errors == []
    assert values == {
        "pod": tpuchips.DEFAULT,
        "prog": "psum",
        "batch": 0,
        "gen": "v5e",
        "sprog": "train",
    }


def test_the_page_offers_every_built_in_program_and_generation():
    assert set(podsettings.PROGRAMS) == set(podprograms.BUILTIN)
    schema = podsettings.schema(8)
    for key in podprograms.BUILTIN:
        assert schema.parse({"prog": key}, ["prog"]) == ({"prog": key}, [])
    for gen in tpuchips.GENERATIONS:
        assert schema.parse({"gen": gen}, ["gen"]) == ({"gen": gen}, [])


def test_a_link_with_bad_values_keeps_the_defaults_and_says_why():
    schema = podsettings.schema(8)
    query = {"pod": "v9:1x1", "prog": "nope", "batch": "-3", "gen": "v7", "extra": "x"}
    texts, notes = schema.from_query(query)
    assert texts == schema.defaults()
    assert len(notes) == 4
    good, notes = schema.from_query({"pod": "v4:2x2x2", "batch": "512", "prog": "dot"})
    assert (good["pod"], good["batch"], good["prog"], notes) == ("v4:2x2x2", "512", "dot", [])


def test_batches_beyond_the_cap_are_refused():
    schema = podsettings.schema(8)
    _, errors = schema.parse({"batch": str(podsettings.MAX_BATCH + 1)}, ["batch"])
    assert len(errors) == 1
    values, errors = schema.parse({"batch": str(podsettings.MAX_BATCH)}, ["batch"])
    assert values == {"batch": podsettings.MAX_BATCH} and errors == []


def test_program_takes_the_batch_or_keeps_its_own():
    assert podsettings.program("train").batch == podprograms.TRAIN_BATCH
    assert podsettings.program("train", 0) == podprograms.train()
    assert podsettings.program("train", 64).batch == 64
    assert podsettings.program("dot", 1000).batch == 1000
    assert podsettings.program("dot", 1000).key == "dot"
    assert podsettings.program("psum", 64).batch is None  # a fixed block: the batch is ignored
    assert podsettings.program("psum", 64) == podprograms.psum()


def test_the_pod_field_takes_several_slices_in_the_same_bounded_field():
    schema = podsettings.schema(8)
    for target in podsettings.MULTISLICE:
        assert schema.parse({"pod": target}, ["pod"]) == ({"pod": target}, [])
    assert schema.parse({"pod": "2xv5e:4x4"}, ["pod"]) == ({"pod": "2 x v5e:4x4"}, [])
    for bad in ("99x v5e:16x16", "10000000 x v5e:4x4", "0 x v5e:4x4", "<b>2</b> x v5e:4x4"):
        texts, notes = schema.from_query({"pod": bad})
        assert texts["pod"] == tpuchips.DEFAULT and len(notes) == 1
