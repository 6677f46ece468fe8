"""The Scenario type owns the explorer's settings: query round trip, cache key, url, plan."""

from urllib.parse import parse_qsl, urlparse

from pmapviz.scenario import KEYS, Scenario


def test_defaults_size_the_mapped_axis_to_the_devices():
    s = Scenario.defaults("matmul", 4)
    assert s.shapes[:2] == ("4, 4, 5", "5, 2") and s.in_axes[:2] == ("0", "None")


def test_query_round_trip_and_stable_key():
    s = Scenario.defaults("add", 8).with_changes({"s0": "3, 8", "a0": "1"}, 8)
    q = s.query()
    assert set(q) == {"fn", "out", "name", "s0", "d0", "a0", "s1", "d1", "a1"}
    assert set(q) <= set(KEYS)
    assert Scenario.from_texts(q, 8) == s
    same = Scenario.from_texts(dict(reversed(list(q.items()))), 8)
    assert same.key == s.key and Scenario.defaults("add", 8).key != s.key
    url = urlparse(s.url("live"))
    assert url.path == "/live" and dict(parse_qsl(url.query, keep_blank_values=True)) == q


def test_plan_reports_text_errors_then_planner_problems():
    _, p, errors = Scenario.defaults("double", 8).with_changes({"s0": "8,²"}, 8).plan(8)
    assert p is None and "not a size" in errors[0]
    _, p, errors = Scenario.defaults("double", 8).with_changes({"s0": "9, 3"}, 8).plan(8)
    assert not errors and not p.ok and p.problems[0].code == "mapped_axis_too_large"
    _, p, errors = Scenario.defaults("double", 8).plan(8)
    assert p.ok and p.out_shapes == (8, 4)


def test_unknown_function_is_a_message():
    program, p, errors = Scenario.from_texts({"fn": "os.system"}, 8).plan(8)
    assert program is None and p is None and "Unknown function `os.system`" in errors[0]
