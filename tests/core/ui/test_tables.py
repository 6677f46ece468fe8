"""Tables: drawn once pandas is imported, under pmapviz.core.base.heavyimports's lock."""

from pmapviz.core.base import heavyimports
from pmapviz.core.ui import tables
from tests.core.ui.conftest import render


def _both(rows):
    from pmapviz.core.ui import tables

    tables.show(rows)
    tables.static(rows)


def test_a_dataframe_and_a_table_of_the_same_rows():
    rows = [{"device": 0, "x": 1.5}, {"device": 1, "x": 2.5}]
    at = render(_both, rows)
    assert not at.exception
    assert list(at.dataframe[0].value["x"]) == [1.5, 2.5]
    assert len(at.table) == 1


def test_frame_is_a_pandas_dataframe_from_the_locked_import():
    frame = tables.frame([{"a": 1}, {"a": 2}])
    assert type(frame) is heavyimports.pandas().DataFrame and list(frame["a"]) == [1, 2]
