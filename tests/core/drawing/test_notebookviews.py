"""A view draws itself as one self-contained HTML card, prints as text and gives its data;
everything shown that a caller typed is escaped."""

import re
import subprocess
import sys

from pmapviz.core.drawing import notebookviews as nv
from tests.conftest import ROOT

EVIL = "<img src=x onerror=alert(1)>"


def test_a_view_is_a_card_with_its_title_and_body_and_nothing_outside():
    v = nv.View(EVIL, nv.paragraph(EVIL) + nv.code_block("a -> b <c>"), "two lines", {"k": [1]})
    page = v._repr_html_()
    assert page == v.html() and page.startswith("<div class='pmapviz-view'")
    assert "<img" not in page and page.count("&lt;img src=x onerror=alert(1)&gt;") == 2
    assert "a -&gt; b &lt;c&gt;" in page
    assert not re.search(r"<script|https?://|src=", page.replace("src=x", ""))
    assert "background:#ffffff" in page and "color:#1f2328" in page  # readable on a dark theme


def test_text_data_and_frame():
    rows = [{"device": "cpu:0", "index": "[0:1]"}, {"device": "cpu:1", "index": "[1:2]"}]
    v = nv.View("x: (2,) float32", "", "cpu:0 [0:1]\ncpu:1 [1:2]", {"rows": rows})
    assert str(v) == repr(v) == "x: (2,) float32\ncpu:0 [0:1]\ncpu:1 [1:2]"
    data = v.to_dict()
    data["rows"].append({})  # a copy: the view keeps its own
    assert len(v.to_dict()["rows"]) == 2
    frame = v.to_frame()
    assert list(frame.columns) == ["device", "index"] and list(frame["device"]) == [
        "cpu:0",
        "cpu:1",
    ]


def test_attributes_come_from_the_source_and_private_names_do_not():
    class Source:
        ok = True

    v = nv.View("t", "", "", source=Source())
    assert v.ok is True
    for name in ("_secret", "missing"):
        try:
            getattr(v, name)
        except AttributeError:
            pass
        else:
            raise AssertionError(name)


def test_problem_box_and_table_escape_every_cell():
    box = nv.problem_box("x (3, <4>) does not split", "Use **8** rows")
    assert "role='alert'" in box and "&lt;4&gt;" in box and "<b>Fix:</b> Use **8** rows" in box
    t = nv.table([{"a": "<b>1</b>", "b": 2}], "label <x>")
    assert "&lt;b&gt;1&lt;/b&gt;" in t and "aria-label='label &lt;x&gt;'" in t
    assert nv.table([], "empty") == ""


def test_ready_configures_jax_once_and_returns_its_notes():
    notes = nv.ready()
    assert notes == nv.ready() and all(isinstance(n, str) for n in notes)


def test_importing_the_views_does_not_start_jax():
    code = (
        "import sys, pmapviz, pmapviz.core.drawing.notebookviews; pmapviz.__all__; "
        "assert 'jax' not in sys.modules and 'streamlit' not in sys.modules"
    )
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
