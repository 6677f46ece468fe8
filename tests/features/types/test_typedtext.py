"""The typed program in a terminal: each mode's lines, from the views."""

from pmapviz.features.types import typedcatalog, typedprogram, typedtext
from tests.conftest import TEST_DEVICES


def test_each_mode_prints_its_equations_types_choices_and_collectives():
    source = typedcatalog.named("meshes", TEST_DEVICES)
    views = {m: typedprogram.typed(source, m) for m in ("manual", "auto")}
    text = typedtext.text(views, "the program")
    lines = text.splitlines()
    assert lines[0] == "the program"
    assert text.index("Auto:") < text.index("Manual:")  # the modes' order, not the dict's
    assert "XLA chose P('data', 'model')" in text
    gather = next(c for c in views["manual"].collectives)
    assert f"<-> {typedtext.collective_line(gather)}" in text
    for row in views["manual"].rows:
        assert any(f"{row.eqn.primitive} -> {', '.join(row.eqn.out_types)}" in ln for ln in lines)


def test_a_refused_mode_says_jax_s_words():
    view = typedprogram.typed(typedcatalog.named("normalise", TEST_DEVICES), "explicit")
    text = "\n".join(typedtext.view_lines(view))
    assert f"JAX refused it (compile): {view.error}" in text
