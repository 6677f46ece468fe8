"""Values written for people: quoted user text, shapes, trees, counts, bytes, one-line errors."""

import math

import pytest

from pmapviz.core.base import valuetext


def test_fmt_count_never_goes_through_float():
    assert valuetext.fmt_count(2**40) == "1,099,511,627,776"
    huge = 10**400  # float() of this raises OverflowError
    assert valuetext.fmt_count(huge) == "1.00e+400"
    assert math.isfinite(len(valuetext.fmt_count(huge)))


@pytest.mark.parametrize(
    "text",
    [
        "![x](http://example.invalid/a.png)",
        "[click](http://example.invalid)",
        "<img src=x onerror=alert(1)>",
        "`code` $x$ **bold**",
        "a\nb\x00c",
        "x" * 500,
    ],
)
def test_quote_makes_user_text_one_literal_code_span(text):
    q = valuetext.quote(text)
    assert q.startswith("`") and q.endswith("`") and q.count("`") == 2
    assert "\n" not in q and "\x00" not in q
    assert len(q) <= 40 + 5


def test_fmt_tree_writes_shapes_tuples_lists_and_dicts():
    assert valuetext.fmt_tree((8, 1_000)) == "(8, 1_000)"
    assert valuetext.fmt_tree(((8, 4), (8,))) == "((8, 4), (8,))"
    assert valuetext.fmt_tree(((8, 4),)) == "((8, 4),)"  # a one-tuple keeps its comma
    assert valuetext.fmt_tree([(2,), (3,)]) == "[(2,), (3,)]"
    assert valuetext.fmt_tree({"w": (5, 2), "b": ()}) == "{'w': (5, 2), 'b': ()}"


def test_fmt_count_switches_to_short_form_after_24_digits():
    assert valuetext.fmt_count(10**23) == f"{10**23:,}"  # 24 digits: exact
    assert valuetext.fmt_count(10**24) == "1.00e+24"  # 25 digits


@pytest.mark.parametrize(
    "n, text",
    [
        (16, "16 bytes"),
        (4_096, "4,096 bytes"),
        (950_000, "0.95 MB"),
        (71_000_000, "71 MB"),
        (1_234_000_000, "1.23 GB"),
        (112_583_507_968, "112.6 GB"),
    ],
)
def test_fmt_bytes_in_the_units_people_read(n, text):
    assert valuetext.fmt_bytes(n) == text


def test_first_line_is_the_message_s_first_line_bounded_or_the_type():
    assert valuetext.first_line(ValueError("  bad shape\nmore detail\n")) == "bad shape"
    assert valuetext.first_line(KeyError()) == "KeyError"
    assert valuetext.first_line(RuntimeError("x" * 500), limit=10) == "x" * 10


def test_a_tree_with_dict_keys_is_shown_as_code_and_shapes_stay_plain():
    """Dict keys come from the user's f: in Markdown they would render as a link or image."""
    key = "[a](http://example.invalid)"
    assert valuetext.md_tree({key: (4, 3)}) == f"`{{{key!r}: (4, 3)}}`"
    assert valuetext.md_tree(((4, 3), [{"w": (2,)}])).startswith("`((4, 3), [{'w'")
    assert valuetext.md_tree((8, 1_250_000)) == "(8, 1_250_000)"
    assert valuetext.md_tree(((8, 4), (8,))) == "((8, 4), (8,))"
    assert "`" not in valuetext.md_tree({"x`": (1,)}).strip("`")  # no way out of the span


@pytest.mark.parametrize(("n", "want"), [(1, "1 device"), (0, "0 devices"), (16, "16 devices")])
def test_a_count_of_one_is_said_in_the_singular(n, want):
    assert valuetext.counted(n, "device") == want


@pytest.mark.parametrize(
    ("n", "typed"),
    [(2 * 2**30, "2G"), (1536 * 2**20, "1536M"), (1_500_000_000, "1500000000"), (2**40, "1T")],
)
def test_a_size_is_written_back_as_it_is_typed_and_reads_back_the_same(n, typed):
    from pmapviz.core.base.valueparse import parse_bytes

    assert valuetext.size_flag(n) == typed and parse_bytes(typed, "--max-bytes") == n


def test_a_whole_message_keeps_every_line_of_jaxs_list_on_one_line():
    err = ValueError(
        "vmap got inconsistent sizes for array axes to be mapped:\n"
        "  * one axis had size 100: axis 0 of argument a of type float32[100,3];\n"
        "  * one axis had size 1250000: axis 0 of argument b of type float32[1250000,3]"
    )
    text = valuetext.whole_message(err)
    assert "\n" not in text and ";;" not in text
    assert text.endswith("axis 0 of argument b of type float32[1250000,3]")
    assert "mapped: one axis had size 100" in text
    assert valuetext.whole_message(ValueError("x" * 5000), limit=100).endswith("...")
    assert valuetext.whole_message(KeyError()) == "KeyError"
