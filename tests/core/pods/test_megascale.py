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
