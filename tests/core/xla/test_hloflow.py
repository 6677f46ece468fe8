"""The data flow read from HLO text: operands through tuple types and tiled layouts (the lines
are libtpu 0.0.42's, a pmap's psum over 2 x v5e:4x4, some attributes cut), users, and searches
that stop at what they find and find nothing through a line of another form."""

from pmapviz.core.xla import hloflow

HLO = """HloModule jit__fun, num_partitions=16
ENTRY %main {
  %param.1 = f32[1,1024]{1,0:T(1,128)} parameter(0)
  %bitcast.2 = f32[8,1,128]{2,1,0:T(1,128)} bitcast(%param.1)
  %all-reduce = f32[8,1,128]{2,1,0:T(1,128)} all-reduce(%bitcast.2), to_apply=%region_0.0
  %after-all = token[] after-all(), frontend_attributes={MegascaleRendezvousKeyName="psum.7_0"}
  %send = (f32[8,1,128]{2,1,0:T(1,128)}, u32[], token[]) send(%all-reduce, %after-all), channel_id=2
  %recv = (f32[8,1,128]{2,1,0:T(1,128)}, u32[], token[]) recv(%after-all), channel_id=1
  %send-done = token[] send-done(%send), channel_id=2, is_host_transfer=true
  %recv-done = (f32[8,1,128]{2,1,0:T(1,128)}, token[]) recv-done(%recv), channel_id=1
  %get-tuple-element.2 = f32[8,1,128]{2,1,0:T(1,128)} get-tuple-element(%recv-done), index=0
  %all-gather.1 = f32[16,1,128]{2,1,0} all-gather(%get-tuple-element.2), replica_groups={{0,1}}
  %odd = f32[8] some form pmapviz does not read [%all-gather.1]
  ROOT %add = f32[8,1,128]{2,1,0:T(1,128)} add(%all-reduce, %get-tuple-element.2)
}
"""


def test_operands_are_read_through_tuple_types_and_tiled_layouts():
    graph = hloflow.operands_of(HLO)
    assert graph["send"] == ("all-reduce", "after-all")  # the type's T(1,128) is no call
    assert graph["recv"] == ("after-all",) and graph["after-all"] == ()
    assert graph["all-reduce"] == ("bitcast.2",)  # to_apply=%region_0.0 is no operand
    assert graph["add"] == ("all-reduce", "get-tuple-element.2")  # ROOT too
    assert "odd" not in graph  # another form: no edges, nothing guessed


def test_a_search_finds_the_nearest_wanted_and_stops_there():
    graph = hloflow.operands_of(HLO)
    users = hloflow.users_of(graph)
    assert users["recv"] == ("recv-done",) and set(users["all-reduce"]) == {"send", "add"}
    assert hloflow.reached("send", graph, ["all-reduce", "bitcast.2"]) == ["all-reduce"]
    assert hloflow.reached("recv", users, ["all-gather.1"]) == ["all-gather.1"]
    assert hloflow.reached("recv", users, ["all-reduce"]) == []  # downstream only
    assert hloflow.reached("send", graph, ["all-gather.1"]) == []
    assert hloflow.reached("send", graph, ["param.1"], limit=1) == []  # the limit holds
