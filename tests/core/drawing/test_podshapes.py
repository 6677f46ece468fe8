"""The chips laid out for drawing: on a multislice target loaded by libtpu, one frame per slice,
hosts inside their slice, the slices side by side without overlap and a DCN link between each
neighbouring pair; a single slice has no frame."""

from types import SimpleNamespace

import pytest

from pmapviz.core.drawing import podshapes
from pmapviz.core.pods import podtopology

pytestmark = pytest.mark.skipif(
    not podtopology.availability().ok, reason="libtpu is the pods extra"
)


@pytest.mark.parametrize("target", ["2 x v5e:4x4", "4 x v5e:2x4"])
def test_the_slices_and_hosts_drawn_are_the_topologys(target):
    pod = podtopology.load(target, multislice=True)
    report = SimpleNamespace(chips=pod.chips)
    spots = podshapes.chip_layout(report)
    assert len(spots) == pod.n_chips
    boxes = podshapes.slice_boxes(report)
    assert [b.host for b in boxes] == list(range(pod.n_slices))
    hosts = podshapes.host_boxes(report)
    assert len({b.host for b in hosts}) == pod.n_hosts
    for b in boxes:  # every chip of slice k inside frame k, no other
        inside = {s.device_ids for s in spots if b.x0 < s.x < b.x1 and b.y0 < s.y < b.y1}
        assert inside == {s.device_ids for s in spots if s.slice == b.host}
    for a, b in zip(boxes, boxes[1:], strict=False):
        assert a.x1 < b.x0
    host_slice = {c.host: c.slice for c in pod.chips}
    for h in hosts:  # a host's rectangle lies inside its own slice's frame
        frame = boxes[host_slice[h.host]]
        assert frame.x0 < h.x0 and h.x1 < frame.x1
    shapes, notes = podshapes._slice_parts(report)
    assert len([s for s in shapes if s.get("name") == "DCN"]) == pod.n_slices - 1
    assert [n["text"] for n in notes if "slice" in n["text"]] == [
        f"<b>slice {k}</b>" for k in range(pod.n_slices)
    ]


def test_one_slice_has_no_frame_and_no_link():
    pod = podtopology.load("v5e:2x4")
    report = SimpleNamespace(chips=pod.chips)
    assert podshapes.slice_boxes(report) == []
    assert podshapes._slice_parts(report) == ([], [])
    assert len(podshapes.host_boxes(report)) == pod.n_hosts
