"""Collectives and XLA's choices given to the equations their metadata names."""

from pmapviz.core.xla.hlo import HloCollective
from pmapviz.features.types import typedmatch
from pmapviz.features.types.hlosource import HloInstr
from pmapviz.features.types.typedeqns import TypedEqn

F = "/src/f.py"


def eqn(k, prim, line=None, column=None, depth=0, shape=(8,)):
    return TypedEqn(
        k, depth, prim, ("f32[8]",), (shape,), F if line else None, line, column, "f", "", False
    )


def coll(kind, op_name, name="c"):
    return HloCollective(kind, name, ((8,),), "f32", 32, ((0, 1),), None, None, op_name, 1)


def instr(line, prim, where, dims=(8,), sharding="{replicated}"):
    text = "f32[" + ",".join(map(str, dims)) + "]"
    return HloInstr(line, f"i{line}", "op", text, f"jit(f)/{prim}", where, sharding)


def test_a_collective_goes_to_the_equation_of_its_primitive_and_line():
    eqns = (eqn(0, "dot_general", 3, 9), eqn(1, "reduce_sum", 3, 20), eqn(2, "psum", 4, 5))
    found, unmatched = typedmatch.collectives_by_eqn(
        eqns,
        (coll("all-reduce", "jit(f)/reduce_sum"), coll("all-gather", None)),
        ((F, 3, 20), None),
    )
    assert {k: [c.kind for c in v] for k, v in found.items()} == {1: ["all-reduce"]}
    assert [c.kind for c in unmatched] == ["all-gather"]  # no metadata: the program's edge


def test_a_python_loop_s_equations_share_their_line_s_collectives_in_order():
    eqns = tuple(eqn(k, "reduce_sum", 7, 3) for k in range(3))
    colls = tuple(coll("all-reduce", "jit(f)/reduce_sum", f"c{k}") for k in range(3))
    found, _ = typedmatch.collectives_by_eqn(eqns, colls, ((F, 7, 3),) * 3)
    assert {k: [c.name for c in v] for k, v in found.items()} == {0: ["c0"], 1: ["c1"], 2: ["c2"]}


def test_an_equation_nested_in_a_jit_without_a_line_is_found_through_its_parent():
    eqns = (eqn(0, "jit", 5, 2), eqn(1, "slice", depth=1), eqn(2, "concatenate", depth=1))
    found, _ = typedmatch.collectives_by_eqn(
        eqns, (coll("collective-permute", "jit(f)/jit(roll)/concatenate"),), ((F, 5, 2),)
    )
    assert list(found) == [2]


def test_xla_s_choice_is_the_instruction_of_the_equation_s_shape():
    eqns = (eqn(0, "dot_general", 3, 9, shape=(8, 4)), eqn(1, "tanh", 3, 2, shape=(8, 4)))
    chosen = (
        instr(10, "dot_general", (F, 3, 9), (8, 16)),  # an operand's transpose, say: other shape
        instr(11, "dot_general", (F, 3, 9), (8, 4), "{devices=[4,2]<=[8]}"),
        instr(12, "tanh", (F, 3, 2), (8, 4), "{devices=[4,2]<=[8]}"),
        instr(13, "add", (F, 9, 1)),
    )
    found = typedmatch.chosen_by_eqn(eqns, chosen)
    assert {k: [i.line for i in v] for k, v in found.items()} == {0: [11], 1: [12]}


def test_equations_without_a_line_take_unclaimed_instructions_by_primitive_and_shape():
    eqns = (eqn(0, "dot_general", shape=(8, 4)),)
    found = typedmatch.chosen_by_eqn(eqns, (instr(4, "dot_general", (F, 2, 1), (8, 4)),))
    assert [i.line for i in found[0]] == [4]
