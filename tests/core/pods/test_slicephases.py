"""Each all-reduce across slices as compiled, its phases read from the program's data flow:
the built-in step's reduce-scatter -> send/recv -> all-gather on 2 x v5e:2x4, a pmap's psum
(all-reduce inside, then the send) and the Training page's two-layer step on 2 x v5e:4x4,
whose gradients are reduced together and sent in three pieces: one all-reduce, three
send/recv pairs side by side, and the all-gathers their values reach."""

import pytest

from pmapviz.core.drawing import podview
from pmapviz.core.pods import podcompile, podprograms, podtopology, slicephases

pytestmark = pytest.mark.skipif(
    not podtopology.availability().ok, reason="compiling for a TPU slice needs libtpu"
)


def _compiled(program, target):
    return podcompile.compile_for(program, target, find_batch=False, multislice=True)


def test_the_built_in_steps_all_reduce_is_its_three_phases():
    r = _compiled(podprograms.train(batch=1024, width=512), "2 x v5e:2x4")
    (phase,) = r.phases()
    assert [c.kind for c in phase] == ["reduce-scatter", "send", "recv", "all-gather"]
    send, recv = phase[1], phase[2]
    assert send.rendezvous == recv.rendezvous != "" and send.shape == recv.shape
    assert r.phase_names == slicephases.phases(r.collectives, r.hlo)  # what the report keeps
    steps = podview.phase_steps(phase)
    assert [(s["what"], s["network"]) for s in steps] == [
        ("reduce-scatter", "ICI"),
        ("send + recv", "DCN"),
        ("all-gather", "ICI"),
    ]


def test_a_pytrees_gradients_sent_in_pieces_are_one_all_reduce_with_its_pieces_side_by_side():
    from pmapviz.features.training import traininganalysis, trainingmodel

    cfg = trainingmodel.Config("mlp", 32, 32 * 32)
    target = traininganalysis.training_target(cfg)
    r = _compiled(podprograms.from_target(target, "phases:mlp:32"), "2 x v5e:4x4")
    (phase,) = r.phases()
    kinds = [c.kind for c in phase]
    sends = [c for c in phase if c.kind == "send"]
    assert kinds[0] == "all-reduce" and len(sends) == 3, kinds
    assert kinds[1:7] == ["send", "recv"] * 3 and set(kinds[7:]) <= {"all-gather"}, kinds
    for s, rv in zip(phase[1:7:2], phase[2:7:2], strict=True):
        assert s.rendezvous == rv.rendezvous and s.shape == rv.shape  # each send's own recv
    steps = podview.phase_steps(phase)
    assert steps[1]["what"] == "3 x send + recv"
    assert steps[1]["shape"] == " + ".join(s.shape for s in sends)
    assert steps[1]["sent"] == podview.fmt_gib(sum(s.moved_bytes for s in sends))
    assert len(steps) == 2 + (len(kinds) > 7)


def test_a_psums_all_reduce_inside_then_between():
    from pmapviz.features.collectives.collectiveanalysis import collective_target

    r = _compiled(
        podprograms.from_target(collective_target("psum", 16, 1024), "ph:psum"), "2 x v5e:2x4"
    )
    (phase,) = r.phases()
    assert [(c.kind, c.network) for c in phase] == [
        ("all-reduce", "ICI"),
        ("send", "DCN"),
        ("recv", "DCN"),
    ]
