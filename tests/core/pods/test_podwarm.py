"""A pod compile warmed in the background, and a page that asks for it meanwhile: it waits for
the warm-up instead of compiling the same program a second time beside it."""

from collections import OrderedDict

import pytest

from pmapviz.core.pods import podcompile, podprograms, podtopology, podwarm

TOPOLOGY = "v5e:2x2"


@pytest.fixture
def fresh(monkeypatch):
    """Nothing kept or in flight; every compile counted (the real one runs)."""
    monkeypatch.setattr(podcompile, "_KEPT", OrderedDict())
    monkeypatch.setattr(podwarm, "_FLIGHTS", {})
    calls = []
    compile_once = podcompile.compile_once

    def counted(program, pod):
        calls.append(program.key)
        return compile_once(program, pod)

    monkeypatch.setattr(podcompile, "compile_once", counted)
    return calls


def test_a_page_asking_during_the_warm_up_gets_its_compile_not_a_second_one(fresh):
    program = podprograms.BUILTIN["psum"]()
    thread = podwarm.start(program, TOPOLOGY)
    assert thread is not None and thread.name == "pmapviz-pod-warm-up" and not thread.daemon
    assert podwarm.start(podprograms.BUILTIN["psum"](), TOPOLOGY) is None  # once
    podwarm.wait(podprograms.BUILTIN["psum"](), TOPOLOGY)  # the page's own program object
    report = podcompile.compile_for(podprograms.BUILTIN["psum"](), TOPOLOGY)
    thread.join()
    assert fresh == ["psum"]  # compiled once, by the warm-up
    assert report.topology == TOPOLOGY and report.collectives  # the psum, as compiled
    assert podcompile.compile_for(program, TOPOLOGY) is report  # kept


def test_nothing_in_flight_is_not_waited_for(fresh):
    assert podwarm.wait(podprograms.BUILTIN["psum"](), TOPOLOGY) is False
    assert fresh == []


def test_a_warm_up_that_fails_says_nothing_and_the_page_says_why(fresh, capfd):
    program = podprograms.BUILTIN["psum"]()
    podwarm.start(program, "v5e:3x3").join()  # a slice libtpu cannot describe
    assert podwarm.wait(program, "v5e:3x3") is False  # done: nothing to wait for
    assert "Traceback" not in capfd.readouterr().err
    with pytest.raises(podtopology.PodUnavailable, match="v5e:3x3"):
        podcompile.compile_for(program, "v5e:3x3")  # the page's own compile says why
