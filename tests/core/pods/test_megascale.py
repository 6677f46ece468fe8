"""The transfers between slices read from a multislice program's HLO, and which network each
collective runs on. The lines are libtpu 0.0.42's own, from the data-parallel step compiled for
2 x v5e:2x4 (``pmapviz pod --topology "2 x v5e:2x4" --program train``); the oracle test in
test_podcompile.py checks the same reading against a plain compile."""

import pytest

from pmapviz.core.pods import megascale

ATTRS = (
    'frontend_attributes={_xla_host_transfer_handler_name="xla_megascale_runtime",'
    '_xla_host_transfer_rendezvous="all-reduce.1_0",_xla_megascale_reduce_operation="SUM",'
    '_xla_megascale_target="{1,2}x{0:7}",_xla_megascale_transfer_type="ALL_REDUCE"}'
)
HLO = "\n".join(
    (
        "HloModule jit_step, num_partitions=8",
        "  %send = (f32[2048,8,128]{2,1,0:T(8,128)}, u32[], token[]) send(%bitcast, %after-all),"
        f" channel_id=2, is_host_transfer=true, {ATTRS}, backend_config={{}}",
        "  %recv = (f32[2048,8,128]{2,1,0:T(8,128)}, u32[], token[]) recv(%after-all), "
        f"channel_id=1, is_host_transfer=true, {ATTRS}",
        "  %send-done = token[] send-done(%send), channel_id=2, is_host_transfer=true, "
        'frontend_attributes={_xla_host_transfer_handler_name="xla_megascale_runtime"}',
        "  %recv-done = (f32[2048,8,128]{2,1,0:T(8,128)}, token[]) recv-done(%recv), "
        "channel_id=1, frontend_attributes="
        '{_xla_host_transfer_handler_name="xla_megascale_runtime"}',
        "  %other = (f32[4]{0}, u32[], token[]) send(%x, %t), channel_id=3, is_host_transfer=true, "
        'frontend_attributes={_xla_host_transfer_handler_name="host_callback"}',
    )
)
SLICE_ORDERS = (tuple(range(100, 108)), tuple(range(200, 208)))


def test_the_send_and_recv_between_slices_are_read_and_the_done_lines_left_out():
    found = megascale.transfers(HLO)
    assert [(t.kind, t.name, t.line) for t in found] == [("send", "send", 2), ("recv", "recv", 3)]
    send = found[0]
    assert send.shape_text == "f32[2048,8,128]"
    assert send.bytes == 2048 * 8 * 128 * 4  # 1/8 of a 64 MiB gradient
    assert (send.transfer_type, send.reduce_op, send.rendezvous) == (
        "ALL_REDUCE",
        "SUM",
        "all-reduce.1_0",
    )
    assert send.slices == (0, 1) and send.partitions == tuple(range(8))


def test_device_k_of_every_slice_named_exchanges_and_that_is_dcn():
    send = megascale.transfers(HLO)[0]
    groups = megascale.groups(send, SLICE_ORDERS)
    assert groups == tuple((100 + k, 200 + k) for k in range(8))
    slice_of = {d: s for s, order in enumerate(SLICE_ORDERS) for d in order}
    assert megascale.network(groups, slice_of) == "DCN"
    assert megascale.network([SLICE_ORDERS[0], SLICE_ORDERS[1]], slice_of) == "ICI"
    assert megascale.network([(100, 101), (107, 200)], slice_of) == "DCN"  # one group spans


def test_a_target_past_the_slices_or_in_another_form_is_unreadable():
    send = megascale.transfers(HLO)[0]
    with pytest.raises(megascale.Unreadable, match="past the target's 1 slices"):
        megascale.groups(send, SLICE_ORDERS[:1])
    for text in ("", "{0,1}x{0:7}", "{1,2}x{7:0}", "{1,2}", "all", "{1,2}x{0:7}x{0:1}"):
        with pytest.raises(megascale.Unreadable):
            megascale.read_target(text)
    assert megascale.read_target("{1,2,3,4}x{0:15}") == ((0, 1, 2, 3), tuple(range(16)))


@pytest.mark.parametrize("slices", [2, 4, 8])
def test_an_all_reduce_between_s_slices_sends_2_s_minus_1_over_s_of_its_operand(slices):
    send, recv = megascale.transfers(HLO)
    target = "{" + ",".join(str(s + 1) for s in range(slices)) + "}x{0:7}"
    wide = megascale.transfers(HLO.replace("{1,2}x{0:7}", target))[0]
    assert megascale.bytes_moved(wide) == pytest.approx(2 * (slices - 1) / slices * send.bytes)
    assert megascale.bytes_moved(recv) == 0.0  # counted on its send


def _named_line(kind: str, target: str, transfer: str, shape: str = "f32[32,256]") -> str:
    """A send/recv as libtpu 0.0.42 writes a pmap's ppermute or all_to_all across slices: the
    target names device ids, unquoted."""
    return (
        f"  %{kind} = ({shape}{{1,0:T(8,128)}}, u32[], token[]) {kind}(%after-all), channel_id=1, "
        "is_host_transfer=true, frontend_attributes={_xla_host_transfer_handler_name="
        '"xla_megascale_runtime",_xla_host_transfer_rendezvous="ppermute.3_0",'
        f'_xla_megascale_target={target},_xla_megascale_transfer_type="{transfer}"}}, '
        'backend_config={"flag_configs":[]}'
    )


def test_a_ppermutes_pairs_and_an_all_to_alls_group_are_read_by_device_id():
    """Issue 66: a pmap's ppermute over two slices hands the pairs that cross slices to the DCN
    runtime as ``{{107->200},{207->100}}``, an all_to_all its whole group; both are read as
    device ids (no slice x partition form), and an all_to_all sends the (S-1)/S of its operand
    bound for the other slices."""
    pairs = "{{107->200},{207->100}}"
    group = "{{" + ",".join(map(str, (*SLICE_ORDERS[0], *SLICE_ORDERS[1]))) + "}}"
    hlo = "\n".join(
        (
            "HloModule m, num_partitions=8",
            _named_line("send", pairs, "ONE_TO_ONE"),
            _named_line("recv", group, "ALL_TO_ALL", "f32[16,2,256]"),
            _named_line("send", group, "ALL_TO_ALL", "f32[16,2,256]"),
        )
    )
    one, recv, a2a = megascale.transfers(hlo)
    assert one.named == ((107, 200), (207, 100)) and one.transfer_type == "ONE_TO_ONE"
    slice_of = {d: s for s, order in enumerate(SLICE_ORDERS) for d in order}
    assert megascale.groups(one, SLICE_ORDERS) == ((107, 200), (207, 100))
    assert megascale.network(megascale.groups(one, SLICE_ORDERS), slice_of) == "DCN"
    assert megascale.bytes_moved(one, slice_of) == 32 * 256 * 4  # its block, once
    assert megascale.groups(a2a, SLICE_ORDERS) == ((*SLICE_ORDERS[0], *SLICE_ORDERS[1]),)
    assert megascale.bytes_moved(a2a, slice_of) == 16 * 2 * 256 * 4 / 2  # half to the other
    assert megascale.bytes_moved(recv, slice_of) == 0.0


def test_a_target_in_a_form_not_read_is_said_on_its_line_and_nothing_raises_before():
    """A target of a form pmapviz does not read (or naming a device on no slice) is kept with its
    reason: reading the HLO never raises, and the report lists the line as unread."""
    hlo = "\n".join(
        (
            "HloModule m",
            _named_line("send", "{{1->2->3}}", "ONE_TO_ONE"),
            _named_line("send", "{{107->999}}", "ONE_TO_ONE"),
            _named_line("send", '"every slice"', "ALL_REDUCE"),
        )
    )
    bad, elsewhere, words = megascale.transfers(hlo)
    assert "does not read: '{{1->2->3}}'" in bad.problem and not elsewhere.problem
    for t, why in ((bad, "does not read"), (elsewhere, "on none of"), (words, "does not read")):
        with pytest.raises(megascale.Unreadable, match=why):
            megascale.groups(t, SLICE_ORDERS)
    assert megascale.target_text('x _xla_megascale_target="{1,2}x{0:7}",y') == "{1,2}x{0:7}"
    assert megascale.target_text("no target here") == ""
