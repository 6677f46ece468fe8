"""The bounded parsers: ASCII digits only, both bounds, exact sizes, one-line messages."""

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmapviz.core.base import pytrees, valueparse
from pmapviz.core.base.valueparse import SettingError

NON_ASCII_DIGITS = ["²", "¹", "³", "١", "５", "٣", "߁", "𝟖"]


def test_parse_int_accepts_ascii_digits_and_separators():
    assert valueparse.parse_int(" 8 ", "n", 1, 10) == 8
    assert valueparse.parse_int("+3", "n", 1, 10) == 3
    assert valueparse.parse_int("1_000", "n", 1, 10**6) == 1000
    assert valueparse.parse_int("10,000,000", "n", 1, 10**8) == 10_000_000
    assert valueparse.parse_int(7, "n", 1, 10) == 7


@pytest.mark.parametrize("digit", NON_ASCII_DIGITS)
def test_parse_int_refuses_digits_that_isdigit_accepts(digit):
    assert digit.isdigit()  # the trap: str.isdigit() says yes
    with pytest.raises(SettingError, match="digits 0-9 only"):
        valueparse.parse_int(digit, "n", 0, 10)
    with pytest.raises(SettingError, match="digits 0-9 only"):
        valueparse.parse_int("1" + digit, "n", 0, 100)


@pytest.mark.parametrize(
    "text, words",
    [
        ("0", "nearest valid: 1"),
        ("99", "nearest valid: 8"),
        ("-5", "nearest valid: 1"),
        (str(2**63), "nearest valid: 8"),
        (str(-(2**64)), "nearest valid: 1"),
        ("9" * 5000, "far too large"),
        ("-" + "9" * 30, "nearest valid: 1"),
        ("1e9", "not a whole number"),
        ("8.0", "not a whole number"),
        ("", "not a whole number"),
        ("nan", "not"),
        ("1,,0", "not"),
        ("_1", "not"),
        ("0x10", "not"),
    ],
)
def test_parse_int_messages_give_the_range_and_the_nearest_value(text, words):
    with pytest.raises(SettingError) as err:
        valueparse.parse_int(text, "Devices", 1, 8)
    msg = str(err.value)
    assert words in msg and "from 1 to 8" in msg
    assert "\n" not in msg and len(msg) < 300  # one line, short


@given(st.text(max_size=60))
def test_parse_int_raises_only_setting_error_and_stays_in_bounds(text):
    try:
        v = valueparse.parse_int(text, "n", -5, 5)
    except SettingError:
        return
    assert isinstance(v, int) and -5 <= v <= 5
    assert re.fullmatch(r"\s*[+-]?[0-9_,]+\s*", text)


@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e309", "1e-400x", "0x1p3", "", "١"])
def test_parse_float_refuses_non_finite_and_non_ascii(text):
    with pytest.raises(SettingError):
        valueparse.parse_float(text, "lr", 1e-6, 100.0)


def test_parse_float_bounds():
    assert valueparse.parse_float("0.05", "lr", 1e-6, 100) == 0.05
    assert valueparse.parse_float("1e-3", "lr", 1e-6, 100) == 1e-3
    with pytest.raises(SettingError, match="nearest valid: 100"):
        valueparse.parse_float("500", "lr", 1e-6, 100)


def test_parse_choice_and_int_list():
    assert valueparse.parse_choice(" cpu ", "p", ("cpu", "gpu")) == "cpu"
    with pytest.raises(SettingError, match="not one of: cpu, gpu"):
        valueparse.parse_choice("CPU²", "p", ("cpu", "gpu"))
    assert valueparse.parse_int_list("4, 1,2 2", "ks", 1, 8) == [1, 2, 4]
    with pytest.raises(SettingError, match="not one of the choices"):
        valueparse.parse_int_list("3", "ks", 1, 8, allowed=[1, 2, 4, 8])
    with pytest.raises(SettingError, match="at most 2"):
        valueparse.parse_int_list("1,2,3", "ks", 1, 8, max_items=2)
    with pytest.raises(SettingError, match="empty"):
        valueparse.parse_int_list(" , ", "ks", 1, 8)


@pytest.mark.parametrize(
    "text, value",
    [
        ("2G", 2 * 2**30),
        ("512MiB", 512 * 2**20),
        ("1.5G", 3 * 2**29),
        ("2GB", 2 * 10**9),
        ("100000000", 10**8),
        ("0.5T", 2**39),
    ],
)
def test_parse_bytes_is_exact(text, value):
    assert valueparse.parse_bytes(text, "--max-bytes") == value


@pytest.mark.parametrize(
    "text, words",
    [("1K", "smallest"), ("2000T", "largest"), ("1e9", "not a size"), ("²G", "not a size")],
)
def test_parse_bytes_has_both_bounds(text, words):
    with pytest.raises(SettingError, match=words):
        valueparse.parse_bytes(text, "--max-bytes")


def test_shapes_are_checked_with_exact_arithmetic():
    big = (8, 1_073_741_824, 1_073_741_824)  # 2**63: np.prod would wrap to a negative number
    with pytest.raises(SettingError, match="elements"):
        valueparse.parse_shape(", ".join(map(str, big)))
    assert valueparse.check_elements((2**20, 2**20), "x") == 2**40
    with pytest.raises(SettingError):
        valueparse.check_elements((2**20, 2**20, 2), "x")
    assert valueparse.parse_shape("(8, 1_250_000, 3)") == (8, 1_250_000, 3)
    assert valueparse.parse_shape("()") == ()


def test_size_messages_quote_the_users_text():
    with pytest.raises(valueparse.SettingError) as err:
        valueparse.parse_shape("8, 3y")
    assert str(err.value) == (
        "shape: `3y` in `8, 3y` is not a size. Sizes are whole numbers >= 0 (digits 0-9), "
        "separated by commas, like 8, 1250000, 3."
    )
    with pytest.raises(valueparse.SettingError) as err:
        valueparse.parse_shape("8, " + "9" * 20, "shape of x")
    assert str(err.value).startswith("shape of x: the size `" + "9" * 17)
    with pytest.raises(valueparse.SettingError, match="^shape: "):
        pytrees.parse_shape_tree("{'w': (5, x)}")


def test_axis_and_axis_name_words():
    for none in ("None", "none", "null", "", "  "):
        assert valueparse.parse_axis(none) is None
    assert pytrees.parse_axis_tree("null") is None
    with pytest.raises(valueparse.SettingError, match="^in_axes 2 `x` is not an axis"):
        pytrees.parse_axis_tree("x", "in_axes 2")
    assert valueparse.parse_axis_name("batch_1") == "batch_1"
    for bad in ("1i", "a-b", "x" * 33, "é"):
        with pytest.raises(valueparse.SettingError):
            valueparse.parse_axis_name(bad)


def test_choice_messages_list_at_most_twelve_choices():
    twelve = tuple(str(k) for k in range(12))
    with pytest.raises(valueparse.SettingError) as err:
        valueparse.parse_choice("x", "Pick", twelve)
    assert ", ..." not in str(err.value) and "0, 1, 2" in str(err.value)
    with pytest.raises(valueparse.SettingError) as err:
        valueparse.parse_choice("x", "Pick", (*twelve, "12"))
    assert (
        ", ..." in str(err.value)
        and "12" not in str(err.value).split("Pick")[1].split(", ...")[0][-4:]
    )


def test_digits_or_takes_ascii_digits_only():
    assert valueparse.digits_or("12") == 12
    assert valueparse.digits_or("²") == valueparse.digits_or("") == 0
    assert valueparse.digits_or("٣", default=-1) == -1
    assert valueparse.digits_or("9" * 40) == 0
