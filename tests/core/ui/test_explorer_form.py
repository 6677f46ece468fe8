"""The explorer's settings form."""

from pmapviz.ui import explorer_form


def test_argument_widths_widen_in_axes_for_a_pytree_argument():
    plain = explorer_form.argument_widths("8, 4", "0")
    assert explorer_form.argument_widths("{'w': (5, 2)}", "None")[2] > plain[2]
    assert explorer_form.argument_widths("8, 4", "{'w': None}")[2] > plain[2]
    assert explorer_form.argument_widths(None, None) == plain
    tree = explorer_form.argument_widths("((2,), (3,))", "0")
    assert tree[1] == plain[1]  # the dtype box keeps its width: "float32" stays readable
    assert tree[2] / sum(tree) > plain[2] / sum(plain)
