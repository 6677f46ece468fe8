"""Tour step 11's parts on their own: the installed JAX's pmap docstring, and the step on one
device (its smap run and typed table still drawn). The step whole: tests/features/tour/
test_toursteps.py."""

from pmapviz.features.tour import tourafter
from tests.features.tour.test_toursteps import CTX


def test_the_first_words_of_pmaps_docstring_are_the_installed_jaxs():
    import jax

    said = tourafter.pmap_said()
    first = jax.pmap.__doc__.strip().splitlines()[0].strip()
    assert said.startswith("Old way of doing parallel map") and ":py:" not in said
    assert said == first.replace(":py:func:", "")  # its reST role, written as a code span


def test_the_step_on_one_device_still_runs_smap_and_types():
    from dataclasses import replace

    one = replace(CTX, n=1, labels=CTX.labels[:1])
    blocks = tourafter.step_after(one)
    assert any(b.kind == "markdown" and "over 1 device:" in b.body for b in blocks)
    assert sum(b.kind == "html" for b in blocks) == 2
    assert any(b.kind == "table" for b in blocks)
