"""The Compiled page's link: the source to compile and the playground's own settings."""

from pmapviz.features.collectives import collectivechoices
from pmapviz.features.compiled import compiledsettings


def test_the_schema_is_the_source_then_the_playgrounds_fields():
    schema = compiledsettings.schema(8)
    playground = collectivechoices.schema(8)
    assert [f.key for f in schema.fields] == ["src", *(f.key for f in playground.fields), "pod"]
    assert schema.defaults()["src"] == "collective"


def test_a_link_with_an_unknown_source_falls_back_with_a_note():
    texts, notes = compiledsettings.schema(8).from_query({"src": "<script>", "c": "pmean"})
    assert texts["src"] == "collective" and texts["c"] == "pmean"
    assert len(notes) == 1 and "<script>" in notes[0]
    typed, errors = compiledsettings.schema(8).parse({**texts, "src": "training"})
    assert not errors and typed["src"] == "training"
