"""HLO instructions' origin and sharding, read from text (a real module's, and hand-made
lines for the syntaxes)."""

import jax
import jax.numpy as jnp

from pmapviz.features.types import hlosource

TEXT = """HloModule jit_f, num_partitions=8

FileNames
1 "/src/f.py"

FunctionNames
1 "f"

FileLocations
1 {file_name_id=1 function_name_id=1 line=7 end_line=7 column=17 end_column=17}

StackFrames
1 {file_location_id=1 parent_frame_id=1}

ENTRY %main.0 (x.0: f32[64,32]) -> (f32[64,16], f32[]) {
  %x.0 = f32[64,32]{1,0} parameter(0), sharding={devices=[4,1,2]<=[8] last_tile_dim_replicate}, metadata={op_name="x"}
  %dot.1 = f32[64,16]{1,0} dot(%x.0, %x.0), sharding={devices=[4,2]<=[8]}, metadata={op_name="jit(f)/dot_general" stack_frame_id=1}
  ROOT %t = (f32[64,16]{1,0}, f32[]) tuple(%dot.1, %c), sharding={{devices=[4,2]<=[8]}, {replicated}}
  %old = f32[8] add(%a, %b), metadata={op_name="jit(f)/add" source_file="/src/g.py" source_line=3}
}
"""  # noqa: E501


def test_frames_give_file_line_and_column():
    assert hlosource.frames(TEXT) == {1: ("/src/f.py", 7, 17)}


def test_each_instruction_with_its_origin_and_sharding():
    found = {i.name: i for i in hlosource.instructions(TEXT)}
    dot = found["dot.1"]
    assert (dot.opcode, dot.primitive, dot.where) == ("dot", "dot_general", ("/src/f.py", 7, 17))
    assert dot.sharding == "{devices=[4,2]<=[8]}" and dot.dims == (64, 16)
    assert found["x.0"].sharding == "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"
    assert found["t"].sharding == "{{devices=[4,2]<=[8]}, {replicated}}" and found["t"].dims is None
    assert found["old"].where == ("/src/g.py", 3, None) and found["old"].sharding is None
    only = hlosource.instructions(TEXT, "sharding=")
    assert [i.name for i in only] == ["x.0", "dot.1", "t"]


def test_a_real_compiled_module_names_this_file_and_line():
    mesh = jax.make_mesh((8,), ("i",))
    x = jax.ShapeDtypeStruct((16, 4), jnp.float32, sharding=jax.NamedSharding(mesh, jax.P("i")))
    f = lambda v: v.sum(axis=0)  # noqa: E731
    text = jax.jit(f).lower(x).compile().as_text()
    (reduce,) = [i for i in hlosource.instructions(text) if i.opcode == "all-reduce"]
    assert reduce.primitive == "reduce_sum" and reduce.where[0] == __file__


def test_braces_and_op_names():
    assert hlosource.braced("{a{b}c}d", 0) == "{a{b}c}" and hlosource.braced("{never", 0) is None
    assert hlosource.primitive_of("jit(f)/shard_map/psum") == "psum"
    assert hlosource.primitive_of(None) is None and hlosource.primitive_of("") is None
