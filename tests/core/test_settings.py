"""The settings layer: every parser's bounds and messages, the schemas' URL fallback, quoting."""

import math
import os
import re
import types

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pmapviz import benchmarking, collectiveops, explorersettings, pytrees, settings, trainingrun
from pmapviz.cluster import cluster
from pmapviz.settings import SettingError
from pmapviz.tour import tour

NON_ASCII_DIGITS = ["²", "¹", "³", "١", "５", "٣", "߁", "𝟖"]


# ---------------------------------------------------------------- parse_int
def test_parse_int_accepts_ascii_digits_and_separators():
    assert settings.parse_int(" 8 ", "n", 1, 10) == 8
    assert settings.parse_int("+3", "n", 1, 10) == 3
    assert settings.parse_int("1_000", "n", 1, 10**6) == 1000
    assert settings.parse_int("10,000,000", "n", 1, 10**8) == 10_000_000
    assert settings.parse_int(7, "n", 1, 10) == 7


@pytest.mark.parametrize("digit", NON_ASCII_DIGITS)
def test_parse_int_refuses_digits_that_isdigit_accepts(digit):
    assert digit.isdigit()  # the trap: str.isdigit() says yes
    with pytest.raises(SettingError, match="digits 0-9 only"):
        settings.parse_int(digit, "n", 0, 10)
    with pytest.raises(SettingError, match="digits 0-9 only"):
        settings.parse_int("1" + digit, "n", 0, 100)


@pytest.mark.parametrize(
    "text, words",
    [("0", "nearest valid: 1"), ("99", "nearest valid: 8"), ("-5", "nearest valid: 1"),
     (str(2**63), "nearest valid: 8"), (str(-(2**64)), "nearest valid: 1"),
     ("9" * 5000, "far too large"), ("-" + "9" * 30, "nearest valid: 1"),
     ("1e9", "not a whole number"), ("8.0", "not a whole number"), ("", "not a whole number"),
     ("nan", "not"), ("1,,0", "not"), ("_1", "not"), ("0x10", "not")],
)  # fmt: skip
def test_parse_int_messages_give_the_range_and_the_nearest_value(text, words):
    with pytest.raises(SettingError) as err:
        settings.parse_int(text, "Devices", 1, 8)
    msg = str(err.value)
    assert words in msg and "from 1 to 8" in msg
    assert "\n" not in msg and len(msg) < 300  # one line, short


@given(st.text(max_size=60))
def test_parse_int_raises_only_setting_error_and_stays_in_bounds(text):
    try:
        v = settings.parse_int(text, "n", -5, 5)
    except SettingError:
        return
    assert isinstance(v, int) and -5 <= v <= 5
    assert re.fullmatch(r"\s*[+-]?[0-9_,]+\s*", text)


# ---------------------------------------------------------------- floats, choices, lists, bytes
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e309", "1e-400x", "0x1p3", "", "١"])
def test_parse_float_refuses_non_finite_and_non_ascii(text):
    with pytest.raises(SettingError):
        settings.parse_float(text, "lr", 1e-6, 100.0)


def test_parse_float_bounds():
    assert settings.parse_float("0.05", "lr", 1e-6, 100) == 0.05
    assert settings.parse_float("1e-3", "lr", 1e-6, 100) == 1e-3
    with pytest.raises(SettingError, match="nearest valid: 100"):
        settings.parse_float("500", "lr", 1e-6, 100)


def test_parse_choice_and_int_list():
    assert settings.parse_choice(" cpu ", "p", ("cpu", "gpu")) == "cpu"
    with pytest.raises(SettingError, match="not one of: cpu, gpu"):
        settings.parse_choice("CPU²", "p", ("cpu", "gpu"))
    assert settings.parse_int_list("4, 1,2 2", "ks", 1, 8) == [1, 2, 4]
    with pytest.raises(SettingError, match="not one of the choices"):
        settings.parse_int_list("3", "ks", 1, 8, allowed=[1, 2, 4, 8])
    with pytest.raises(SettingError, match="at most 2"):
        settings.parse_int_list("1,2,3", "ks", 1, 8, max_items=2)
    with pytest.raises(SettingError, match="empty"):
        settings.parse_int_list(" , ", "ks", 1, 8)


@pytest.mark.parametrize(
    "text, value",
    [("2G", 2 * 2**30), ("512MiB", 512 * 2**20), ("1.5G", 3 * 2**29), ("2GB", 2 * 10**9),
     ("100000000", 10**8), ("0.5T", 2**39)],
)  # fmt: skip
def test_parse_bytes_is_exact(text, value):
    assert settings.parse_bytes(text, "--max-bytes") == value


@pytest.mark.parametrize("text, words", [("1K", "smallest"), ("2000T", "largest"),
                                         ("1e9", "not a size"), ("²G", "not a size")])  # fmt: skip
def test_parse_bytes_has_both_bounds(text, words):
    with pytest.raises(SettingError, match=words):
        settings.parse_bytes(text, "--max-bytes")


# ---------------------------------------------------------------- shapes
def test_shapes_are_checked_with_exact_arithmetic():
    big = (8, 1_073_741_824, 1_073_741_824)  # 2**63: np.prod would wrap to a negative number
    with pytest.raises(SettingError, match="elements"):
        settings.parse_shape(", ".join(map(str, big)))
    assert settings.check_elements((2**20, 2**20), "x") == 2**40
    with pytest.raises(SettingError):
        settings.check_elements((2**20, 2**20, 2), "x")
    assert settings.parse_shape("(8, 1_250_000, 3)") == (8, 1_250_000, 3)
    assert settings.parse_shape("()") == ()


def test_fmt_count_never_goes_through_float():
    assert settings.fmt_count(2**40) == "1,099,511,627,776"
    huge = 10**400  # float() of this raises OverflowError
    assert settings.fmt_count(huge) == "1.00e+400"
    assert math.isfinite(len(settings.fmt_count(huge)))


# ---------------------------------------------------------------- quoting user text
@pytest.mark.parametrize(
    "text",
    ["![x](http://example.invalid/a.png)", "[click](http://example.invalid)",
     "<img src=x onerror=alert(1)>", "`code` $x$ **bold**", "a\nb\x00c", "x" * 500],
)  # fmt: skip
def test_quote_makes_user_text_one_literal_code_span(text):
    q = settings.quote(text)
    assert q.startswith("`") and q.endswith("`") and q.count("`") == 2
    assert "\n" not in q and "\x00" not in q
    assert len(q) <= 40 + 5


# ---------------------------------------------------------------- schemas: links and widgets
def test_from_query_replaces_bad_values_by_defaults_with_a_note():
    schema = collectiveops.schema(8)
    texts, notes = schema.from_query({"n": "²", "m": str(2**70), "c": "pmean", "zzz": "1"})
    assert texts["n"] == "8" and texts["m"] == "8" and texts["c"] == "pmean"
    assert len(notes) == 2
    assert all("Using the default" in n for n in notes)
    assert any("`²`" in n for n in notes) and any("far too large" in n for n in notes)


def test_schema_parse_gives_typed_values_or_one_error_per_field():
    schema = trainingrun.schema(8)
    values, errors = schema.parse({"batch": "256", "steps": "10", "lr": "0.1", "k": "8"})
    assert values["batch"] == 256 and values["steps"] == 10 and values["lr"] == 0.1
    assert not errors
    values, errors = schema.parse({"batch": "²", "steps": "0", "lr": "nan"})
    assert len(errors) == 3 and "batch" not in values


@pytest.mark.parametrize("n", [1, 3, 6, 8, 64])
def test_every_schema_default_parses(n):
    for schema in (explorersettings.schema(n), collectiveops.schema(n), trainingrun.schema(n),
                   cluster.schema(), tour.schema(), benchmarking.schema(n, "dot"),
                   benchmarking.schema(n, "matmul"),
                   benchmarking.schema(n, "elementwise")):  # fmt: skip
        values, errors = schema.parse(schema.defaults())
        assert not errors, (n, errors)


@pytest.mark.parametrize("n", [3, 5, 6, 7, 8])
def test_timing_defaults_split_evenly_on_any_device_count(n):
    """The default sweep used to be refused on any count that is not a power of two."""
    from pmapviz import benchmarking as bench

    schema = benchmarking.schema(n, "dot")
    values, _ = schema.parse(schema.defaults())
    lcm = math.lcm(*values["ks"])
    assert all(s % lcm == 0 for s in values["sizes"])
    runs = bench.plan_sweep(bench.WORKLOADS["dot"], values["sizes"], values["ks"],
                            values["impls"], 2**34)  # fmt: skip
    assert len(runs) >= len(values["sizes"]) * len(values["ks"])


def test_explorer_schema_refuses_what_the_planner_would_and_keeps_what_it_accepts():
    schema = explorersettings.schema(8)
    good = {"fn": "matmul", "s0": "8, 4, 5", "s1": "5, 2", "a0": "0", "a1": "None"}
    texts, notes = schema.from_query(good)
    assert not notes and texts["s1"] == "5, 2"
    texts, notes = schema.from_query({"s0": "8,²", "name": "![x](http://example.invalid)"})
    assert len(notes) == 2 and texts["s0"] == schema.defaults()["s0"]
    assert not any("](http" in n.replace("`", "") and "`" not in n for n in notes)


def test_present_flag():
    assert settings.present({"present": "1"}) and not settings.present({"present": "²"})


# ---------------------------------------------------------------- each page schema's bounds
@pytest.mark.parametrize("n", [1, 3, 8])
def test_training_offers_exactly_this_servers_device_counts(n):
    schema = trainingrun.schema(n)
    k = schema.field("k")
    assert schema.defaults()["k"] == str(n)
    assert k.parse(str(n), "Devices") == str(n)
    for bad in ("0", str(n + 1)):
        with pytest.raises(settings.SettingError):
            k.parse(bad, "Devices")
    assert int(schema.defaults()["batch"]) % n == 0  # the default batch splits evenly


@pytest.mark.parametrize("n, m", [(1, 4), (8, 8), (63, 63), (64, 64), (65, 64), (512, 64)])
def test_collectives_elements_default_and_cap(n, m):
    schema = collectiveops.schema(n)
    assert schema.defaults()["m"] == str(m) and schema.defaults()["n"] == str(n)
    values, errors = schema.parse({**schema.defaults(), "m": "64", "n": str(n)})
    assert not errors and values["m"] == 64 and values["n"] == n
    _, errors = schema.parse({**schema.defaults(), "m": "65"})
    assert len(errors) == 1 and "Elements per device" in errors[0]
    _, errors = schema.parse({**schema.defaults(), "n": str(n + 1)})
    assert len(errors) == 1 and "Devices" in errors[0]


def test_timing_keys_and_runs_bounds():
    schema = benchmarking.schema(8, "dot")
    assert [f.key for f in schema.fields] == ["w", "r", "sizes", "ks", "impls"]
    r = schema.field("r")
    assert r.parse("3", "Timed runs") == 3 and r.parse("30", "Timed runs") == 30
    for bad in ("2", "31"):
        with pytest.raises(settings.SettingError, match="Timed runs"):
            r.parse(bad, "Timed runs")
    texts, notes = schema.from_query({"r": "12"})
    assert texts["r"] == "12" and not notes


def test_explorer_labels_arguments_by_position_and_bounds_links():
    schema = explorersettings.schema(8)
    labels = {f.key: f.label for f in schema.fields}
    assert [labels[f"s{k}"] for k in range(3)] == ["shape 1", "shape 2", "shape 3"]
    assert [labels[f"a{k}"] for k in range(3)] == ["in_axes 1", "in_axes 2", "in_axes 3"]
    texts, notes = schema.from_query({"s1": "8, y", "pn": "4097"})
    assert texts["s1"] == schema.defaults()["s1"] and texts["pn"] == ""
    assert len(notes) == 2 and "4,096" in notes[0] and "s1=" in notes[1], notes
    texts, notes = schema.from_query({"pn": "4096", "s1": "{'w': (5, 2)}"})
    assert texts["pn"] == "4096" and texts["s1"] == "{'w': (5, 2)}" and not notes


def test_fmt_tree_writes_shapes_tuples_lists_and_dicts():
    assert settings.fmt_tree((8, 1_000)) == "(8, 1_000)"
    assert settings.fmt_tree(((8, 4), (8,))) == "((8, 4), (8,))"
    assert settings.fmt_tree(((8, 4),)) == "((8, 4),)"  # a one-tuple keeps its comma
    assert settings.fmt_tree([(2,), (3,)]) == "[(2,), (3,)]"
    assert settings.fmt_tree({"w": (5, 2), "b": ()}) == "{'w': (5, 2), 'b': ()}"


def test_explorer_links_with_a_refused_expression_fall_back_together():
    schema = explorersettings.schema(8)
    texts, notes = schema.from_query({"fn": "expr", "args": "x", "body": "x.__class__"})
    assert (texts["args"], texts["body"]) == (schema.defaults()["args"], schema.defaults()["body"])
    assert len(notes) == 1 and notes[0].startswith("The link's args/body:"), notes
    texts, notes = schema.from_query({"fn": "expr", "args": "x, p", "body": "x + p['w']"})
    assert texts["body"] == "x + p['w']" and not notes


def test_every_schema_field_has_its_url_key_and_the_label_its_messages_use():
    """Keys are the links' vocabulary (a renamed key breaks every shared link); labels name
    the field in every message about it."""
    want = {
        collectiveops.schema(8): [("c", "Collective"), ("n", "Devices"),
                                  ("m", "Elements per device"), ("v", "Values"),
                                  ("g", "axis_index_groups"), ("p", "Permutation"),
                                  ("pairs", "Pairs")],
        trainingrun.schema(8): [("model", "Model"), ("k", "Devices"), ("batch", "Global batch"),
                               ("steps", "Steps"), ("lr", "Learning rate"),
                               ("red", "Reduction")],
        benchmarking.schema(8): [("w", "Workload"), ("r", "Timed runs"), ("sizes", "Sizes"),
                             ("ks", "Device counts"), ("impls", "Implementations")],
    }  # fmt: skip
    for schema, fields in want.items():
        assert [(f.key, f.label) for f in schema.fields] == fields
    explorer = {f.key: f.label for f in explorersettings.schema(8).fields}
    assert {k: explorer[k] for k in ("fn", "args", "body", "out", "name", "pn")} == {
        "fn": "Function", "args": "Arguments of f", "body": "Body of f", "out": "out_axes",
        "name": "axis_name", "pn": "Plan for N devices"}  # fmt: skip
    assert [f.label for f in explorersettings.schema(8).fields if f.key in ("d0", "d1")] == [
        "dtype 1", "dtype 2"]  # fmt: skip
    assert [(f.key, f.label) for f in cluster.schema().fields] == [
        ("p", "Processes"), ("d", "CPU devices per process"), ("report", "Report path"),
        ("nodes", "Nodes"), ("ppn", "Processes per node"), ("dpp", "Devices per process"),
        ("kind", "Device kind")]  # fmt: skip
    _, errors = trainingrun.schema(8).parse({"k": "9"}, ["k"])
    assert errors and errors[0].startswith("Devices")


def test_size_messages_quote_the_users_text():
    with pytest.raises(settings.SettingError) as err:
        settings.parse_shape("8, 3y")
    assert str(err.value) == (
        "shape: `3y` in `8, 3y` is not a size. Sizes are whole numbers >= 0 (digits 0-9), "
        "separated by commas, like 8, 1250000, 3."
    )
    with pytest.raises(settings.SettingError) as err:
        settings.parse_shape("8, " + "9" * 20, "shape of x")
    assert str(err.value).startswith("shape of x: the size `" + "9" * 17)
    with pytest.raises(settings.SettingError, match="^shape: "):
        pytrees.parse_shape_tree("{'w': (5, x)}")


def test_axis_and_axis_name_words():
    for none in ("None", "none", "null", "", "  "):
        assert settings.parse_axis(none) is None
    assert pytrees.parse_axis_tree("null") is None
    with pytest.raises(settings.SettingError, match="^in_axes 2 `x` is not an axis"):
        pytrees.parse_axis_tree("x", "in_axes 2")
    assert settings.parse_axis_name("batch_1") == "batch_1"
    for bad in ("1i", "a-b", "x" * 33, "é"):
        with pytest.raises(settings.SettingError):
            settings.parse_axis_name(bad)


def test_fmt_count_switches_to_short_form_after_24_digits():
    assert settings.fmt_count(10**23) == f"{10**23:,}"  # 24 digits: exact
    assert settings.fmt_count(10**24) == "1.00e+24"  # 25 digits


def test_choice_messages_list_at_most_twelve_choices():
    twelve = tuple(str(k) for k in range(12))
    with pytest.raises(settings.SettingError) as err:
        settings.parse_choice("x", "Pick", twelve)
    assert ", ..." not in str(err.value) and "0, 1, 2" in str(err.value)
    with pytest.raises(settings.SettingError) as err:
        settings.parse_choice("x", "Pick", (*twelve, "12"))
    assert (
        ", ..." in str(err.value)
        and "12" not in str(err.value).split("Pick")[1].split(", ...")[0][-4:]
    )


def test_float_and_link_messages_quote_what_was_typed():
    with pytest.raises(settings.SettingError, match="`500` is out of range"):
        settings.parse_float("500", "Learning rate", 1e-6, 100.0)
    texts, notes = explorersettings.schema(8).from_query({"out": "x", "pn": "0"})
    assert texts["out"] == "0" and texts["pn"] == ""
    assert len(notes) == 2 and "out=" in notes[0] and "pn=" in notes[1], notes
    texts, notes = tour.schema().from_query({"step": "3"})
    assert texts["step"] == "3" and not notes


@pytest.mark.parametrize("n, text", [(16, "16 bytes"), (4_096, "4,096 bytes"),
                                     (950_000, "0.95 MB"), (71_000_000, "71 MB"),
                                     (1_234_000_000, "1.23 GB"),
                                     (112_583_507_968, "112.6 GB")])  # fmt: skip
def test_fmt_bytes_in_the_units_people_read(n, text):
    assert settings.fmt_bytes(n) == text


@pytest.mark.parametrize("n", [1, 3, 8])
def test_to_query_is_the_inverse_of_from_query_for_every_page(n):
    schemas = (explorersettings.schema(n), collectiveops.schema(n), trainingrun.schema(n),
               cluster.schema(), tour.schema(), benchmarking.schema(n, "matmul"))  # fmt: skip
    for schema in schemas:
        values, errors = schema.parse(schema.defaults())
        assert not errors
        query = schema.to_query(values)  # typed values (lists too) back to text
        assert set(query) == {f.key for f in schema.fields}
        texts, notes = schema.from_query(query)
        assert notes == [] and schema.parse(texts)[0] == values


def test_to_query_leaves_out_what_it_is_not_given_and_joins_lists():
    schema = benchmarking.schema(8, "dot")
    assert schema.to_query({"ks": [1, 2, 8], "w": "dot"}) == {"w": "dot", "ks": "1,2,8"}


def test_paths_a_folder_to_read_and_a_file_to_write(tmp_path):
    assert settings.parse_folder(f" {tmp_path} ", "--reports") == str(tmp_path.resolve())
    for bad in ("", "a\x00b", "x" * 5000, str(tmp_path / "missing")):
        with pytest.raises(settings.SettingError):
            settings.parse_folder(bad, "--reports")
    assert settings.parse_output_path(str(tmp_path / "r.json"), "--report") == tmp_path / "r.json"
    with pytest.raises(settings.SettingError, match="is a folder"):
        settings.parse_output_path(str(tmp_path), "--report")
    with pytest.raises(settings.SettingError, match="its folder does not exist"):
        settings.parse_output_path(str(tmp_path / "no" / "r.json"), "--report")


def test_a_file_to_write_is_refused_before_any_work_with_the_path_and_a_fix(tmp_path):
    """Issue 36: `bench --json /tmp` ran the whole sweep, then died with IsADirectoryError."""
    (tmp_path / "old.json").write_text("{}")
    (tmp_path / "a_file").write_text("")
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "target.json")  # its folder exists
    for ok in ("new.json", "old.json", "dangling.json"):
        assert settings.parse_output_path(str(tmp_path / ok), "--json") == tmp_path / ok
    cases = {
        str(tmp_path): f"--json `{tmp_path}` is a folder: give a file name inside it, e.g. "
        f"`{tmp_path}/bench.json`.",
        f"{tmp_path}/no/b.json": f"--json `{tmp_path}/no/b.json`: its folder does not exist: "
        f"create `{tmp_path}/no` first, or name a file in a folder that exists.",
        f"{tmp_path}/a_file/b.json": f"--json `{tmp_path}/a_file/b.json`: `{tmp_path}/a_file` "
        "is a file, not a folder: name a file inside a folder.",
        f"{tmp_path}/loop.json": f"--json `{tmp_path}/loop.json` is a link that loops: name "
        "another file.",
    }
    for text, said in cases.items():
        with pytest.raises(settings.SettingError) as err:
            settings.parse_output_path(text, "--json", "bench.json")
        assert str(err.value) == said
    deep = tmp_path / ("d" * 150)
    deep.mkdir()
    with pytest.raises(settings.SettingError, match=r"e\.g\. `\.\.\.d+/report\.json`\.$"):
        settings.parse_output_path(str(deep), "--report")  # a long path keeps its end


def test_a_file_to_write_where_this_user_may_not_write(tmp_path, monkeypatch):
    """What os.access says decides: an existing file, or a new file's folder, not writable."""
    (tmp_path / "old.json").write_text("{}")
    no_access = types.SimpleNamespace(
        access=lambda path, mode: False, W_OK=os.W_OK, X_OK=os.X_OK, path=os.path
    )  # settings' own view of os, nobody else's
    monkeypatch.setattr(settings, "os", no_access)
    with pytest.raises(settings.SettingError) as err:
        settings.parse_output_path(str(tmp_path / "old.json"), "--report")
    said = "exists and is not writable by this user: make it writable (chmod u+w) or name "
    assert str(err.value) == f"--report `{tmp_path}/old.json` {said}another file."
    with pytest.raises(settings.SettingError) as err:
        settings.parse_output_path(str(tmp_path / "new.json"), "--report")
    said = "is not writable by this user: name a file in a folder you can write to."
    assert str(err.value) == f"--report `{tmp_path}/new.json`: its folder `{tmp_path}` {said}"


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere: os.access says so too")
def test_a_read_only_folder_and_file_are_refused(tmp_path):
    """A real read-only folder and file (chmod), for a user who is not root; as root, where
    os.access says writable and the write would succeed, the test above stands in for it."""
    folder = tmp_path / "ro"
    folder.mkdir()
    (folder / "old.json").write_text("{}")
    (folder / "old.json").chmod(0o444)
    folder.chmod(0o555)
    try:
        with pytest.raises(settings.SettingError, match="its folder .* is not writable"):
            settings.parse_output_path(str(folder / "new.json"), "--json")
        with pytest.raises(settings.SettingError, match="exists and is not writable"):
            settings.parse_output_path(str(folder / "old.json"), "--json")
    finally:
        folder.chmod(0o755)


def test_a_file_to_write_that_cannot_be_looked_at_is_one_line(tmp_path, monkeypatch):
    def denied(path):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(settings, "os", types.SimpleNamespace(
        path=types.SimpleNamespace(realpath=denied)))  # fmt: skip
    with pytest.raises(settings.SettingError) as err:
        settings.parse_output_path(str(tmp_path / "x.json"), "--json")
    assert str(err.value) == (f"--json `{tmp_path}/x.json` cannot be checked (Permission denied): "
                              "name a file in a folder you can write to.")  # fmt: skip


def test_first_line_is_the_message_s_first_line_bounded_or_the_type():
    assert settings.first_line(ValueError("  bad shape\nmore detail\n")) == "bad shape"
    assert settings.first_line(KeyError()) == "KeyError"
    assert settings.first_line(RuntimeError("x" * 500), limit=10) == "x" * 10


def test_digits_or_takes_ascii_digits_only():
    assert settings.digits_or("12") == 12
    assert settings.digits_or("²") == settings.digits_or("") == 0
    assert settings.digits_or("٣", default=-1) == -1
    assert settings.digits_or("9" * 40) == 0


def test_a_tree_with_dict_keys_is_shown_as_code_and_shapes_stay_plain():
    """Dict keys come from the user's f: in Markdown they would render as a link or image."""
    key = "[a](http://example.invalid)"
    assert settings.md_tree({key: (4, 3)}) == f"`{{{key!r}: (4, 3)}}`"
    assert settings.md_tree(((4, 3), [{"w": (2,)}])).startswith("`((4, 3), [{'w'")
    assert settings.md_tree((8, 1_250_000)) == "(8, 1_250_000)"
    assert settings.md_tree(((8, 4), (8,))) == "((8, 4), (8,))"
    assert "`" not in settings.md_tree({"x`": (1,)}).strip("`")  # no way out of the span
