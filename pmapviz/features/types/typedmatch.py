"""Which equation each piece of a compiled module belongs to, by the metadata JAX wrote into
it: an HLO instruction's op_name ends with the primitive of the equation it was lowered from,
and its stack frame names that equation's source position (file, line, column).

* :func:`collectives_by_eqn`: each collective XLA emitted, given to the equation whose
  primitive and position its metadata names (a collective the partitioner inserted for an
  equation carries that equation's metadata); several equations at one source position (a
  Python loop) share its collectives in order. A collective whose metadata names no equation
  (a resharding at the program's boundary) stays apart, in ``unmatched``. An equation JAX
  recorded no source line for is matched by its primitive alone.
* :func:`chosen_by_eqn`: for Auto, each equation's result in the propagated module, the
  instruction of its primitive and position whose shape is the equation's output shape.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from pmapviz.core.xla.hlo import HloCollective
from pmapviz.features.types.hlosource import HloInstr, Where, primitive_of
from pmapviz.features.types.typedeqns import TypedEqn


def _same_place(eqn: TypedEqn, where: Where | None) -> bool:
    if where is None or eqn.file is None:
        return False
    file, line, column = where
    if (file, line) != (eqn.file, eqn.line):
        return False
    return column is None or eqn.column is None or column == eqn.column


def _inside(eqns: tuple[TypedEqn, ...], k: int) -> list[int]:
    """The equations nested in equation ``k`` (those after it, one level deeper or more)."""
    out = []
    for e in eqns[k + 1 :]:
        if e.depth <= eqns[k].depth:
            break
        out.append(e.index)
    return out


def _candidates(eqns: tuple[TypedEqn, ...], prim: str | None, where: Where | None) -> list[int]:
    """Equations at ``where`` of primitive ``prim``; else those of ``prim`` nested in an
    equation at ``where`` that JAX recorded no source line for (a ``jit`` inside f, such as
    ``jnp.roll``'s: its equations keep no frame of f); else at ``where`` of any primitive;
    else the equations of ``prim`` without a source line."""
    here = [e.index for e in eqns if _same_place(e, where)]
    same = [k for k in here if eqns[k].primitive == prim]
    nested = [
        i
        for k in here
        for i in _inside(eqns, k)
        if eqns[i].file is None and eqns[i].primitive == prim
    ]
    return (
        same or nested or here or [e.index for e in eqns if e.file is None and e.primitive == prim]
    )


def collectives_by_eqn(
    eqns: tuple[TypedEqn, ...],
    collectives: tuple[HloCollective, ...],
    where: tuple[Where | None, ...],
) -> tuple[dict[int, list[HloCollective]], list[HloCollective]]:
    """(equation index -> its collectives, the collectives that name no equation)."""
    by_eqn: dict[int, list[HloCollective]] = defaultdict(list)
    unmatched: list[HloCollective] = []
    dealt: dict[tuple, int] = defaultdict(int)  # (primitive, where) -> collectives dealt so far
    for c, w in zip(collectives, where, strict=True):
        prim = primitive_of(c.op_name)
        found = _candidates(eqns, prim, w)
        if not found:
            unmatched.append(c)
            continue
        key = (prim, w, c.kind)
        k = found[dealt[key] % len(found)]
        dealt[key] += 1
        by_eqn[k].append(c)
    return dict(by_eqn), unmatched


def chosen_by_eqn(
    eqns: tuple[TypedEqn, ...], chosen: tuple[HloInstr, ...]
) -> dict[int, tuple[HloInstr, ...]]:
    """Equation index -> the propagated module's instruction for its (one) output: of its
    primitive, at its source position, of its output's shape; an equation alone at its
    position takes the last such instruction (its result), equations of a Python loop at one
    position take theirs in order. An equation JAX recorded no source line for (its stack
    too deep for the traceback JAX keeps) is matched by primitive and shape among the
    instructions no other equation claims. An equation with none found is left out."""
    pool: dict[tuple, list[HloInstr]] = defaultdict(list)
    sourced = {(e.primitive, e.file, e.line) for e in eqns if e.file is not None}
    for i in chosen:
        if i.where is not None and i.op_name:
            pool[(i.primitive, i.where[0], i.where[1], i.dims)].append(i)
            if (i.primitive, i.where[0], i.where[1]) not in sourced:  # for those without
                pool[(i.primitive, None, None, i.dims)].append(i)
    twins = Counter((e.primitive, e.file, e.line, e.column) for e in eqns)
    taken: dict[tuple, int] = defaultdict(int)
    out: dict[int, tuple[HloInstr, ...]] = {}
    for e in eqns:
        if len(e.out_shapes) != 1:
            continue
        key = (e.primitive, e.file, e.line, e.out_shapes[0])
        options = [i for i in pool.get(key, ()) if e.file is None or _same_place(e, i.where)]
        if not options:
            continue
        if twins[(e.primitive, e.file, e.line, e.column)] == 1:
            out[e.index] = (options[-1],)
        elif taken[key] < len(options):
            out[e.index] = (options[taken[key]],)
            taken[key] += 1
    return out
