"""pmapviz.devices(): the devices of this process as JAX reports them, and what to do when the
count asked for cannot take effect any more."""

import jax
import pytest

from pmapviz.core.drawing import notebookviews, showdevices


def test_every_device_is_drawn_with_its_name_and_id_as_jax_says():
    view = showdevices.devices()
    rows = view.to_dict()["rows"]
    assert [(r["device"], r["id"]) for r in rows] == [(str(d), d.id) for d in jax.devices("cpu")]
    page = view._repr_html_()
    assert "role='img'" in page and all(f"id {d.id}" in page for d in jax.devices("cpu"))
    assert view.to_dict()["sets"] == [{"platform": "cpu", "kind": "cpu", "count": 8}]
    assert str(view).startswith("8 cpu devices (JAX ") and "cpu:7" in str(view)


def test_a_count_asked_for_after_jax_started_says_how_to_get_it():
    view = showdevices.devices(3)  # this process started JAX with 8
    (note,) = view.to_dict()["notes"]
    assert note.startswith("Asked for 3 CPU devices, but JAX started in this process with 8")
    assert "Restart the kernel" in note and "pmapviz.devices(3)" in note and note in str(view)
    assert len(view.to_dict()["rows"]) == 8  # what the process really has


def test_the_count_it_has_is_no_note():
    """Asking for the count the process has adds no restart note: the notes are the process's
    own start notes (none, unless this worker's first start had one, e.g. the compile cache's)."""
    notes = showdevices.devices(8).to_dict()["notes"]
    assert notes == list(notebookviews.ready())
    assert not any("Restart the kernel" in note for note in notes)


@pytest.mark.parametrize("bad", [0, 65, "two", "８"])
def test_a_bad_count_is_a_value_error_with_the_range(bad):
    with pytest.raises(ValueError, match="from 1 to 64"):
        showdevices.devices(bad)
