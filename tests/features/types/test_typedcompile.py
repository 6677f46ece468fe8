"""One compile of a mode: its collectives with their source positions, its memory, and for
Auto the sharding XLA chose for every value, read from the module before partitioning."""

import os

import jax
import jax.numpy as jnp

from pmapviz.core.budgets import memorymodel
from pmapviz.features.types import typedcompile


def _program(mode="auto"):
    kind = jax.sharding.AxisType.Auto if mode == "auto" else jax.sharding.AxisType.Explicit
    mesh = jax.make_mesh((4, 2), ("data", "model"), axis_types=(kind, kind))
    x = jax.ShapeDtypeStruct((64, 32), jnp.float32, sharding=jax.NamedSharding(mesh, jax.P("data")))
    w = jax.ShapeDtypeStruct(
        (32, 16), jnp.float32, sharding=jax.NamedSharding(mesh, jax.P(None, "model"))
    )

    def f(a, b):
        return jnp.tanh(a @ b).sum(axis=1)

    return f, (x, w), mesh


def test_auto_reads_xla_s_choice_for_every_value_in_one_compile():
    f, args, mesh = _program()
    traced = typedcompile.trace(f, args, mesh, True)
    assert traced.jaxpr.jaxpr.eqns[0].primitive.name == "dot_general"  # f's own equations
    compiled = typedcompile.compile_mode(traced, mesh, 3, True)
    assert compiled.propagated and compiled.compile_s > 0
    chosen = {i.primitive: i.sharding for i in compiled.chosen if i.op_name}
    assert chosen["dot_general"] == "{devices=[4,2]<=[8]}"  # both axes split: rows, columns
    assert chosen["reduce_sum"] == "{devices=[4,2]<=[8] last_tile_dim_replicate}"
    (reduce,) = compiled.collectives
    assert reduce.kind == "all-reduce" and reduce.replica_groups == ((0, 1), (2, 3), (4, 5), (6, 7))
    (where,) = compiled.collective_where
    assert where[0] == __file__
    assert dict(compiled.memory)["arguments"] == (16 * 32 + 32 * 8) * 4  # one device's blocks


def test_other_modes_read_no_choices_and_a_fresh_name_keeps_the_code():
    f, args, mesh = _program("explicit")
    compiled = typedcompile.compile_mode(typedcompile.trace(f, args, mesh, False), mesh, 3, False)
    assert not compiled.propagated and compiled.chosen == ()
    fresh = typedcompile.renamed(f)
    assert fresh.__code__ is f.__code__ and fresh.__name__.startswith("f_typed")
    assert typedcompile.renamed(fresh).__name__ != fresh.__name__
    assert typedcompile.renamed(jax.numpy.sin) is not jax.numpy.sin  # a wrapper for the rest


def test_a_compile_holds_its_estimate_in_the_pool(monkeypatch):
    f, args, mesh = _program("explicit")
    held = []
    real = typedcompile.memorypool.reserve
    monkeypatch.setattr(
        typedcompile.memorypool,
        "reserve",
        lambda need, label, *a, **k: held.append(need) or real(need, label, *a, **k),
    )
    typedcompile.compile_mode(typedcompile.trace(f, args, mesh, False), mesh, 200, False)
    assert held == [typedcompile.compile_need(200)]
    assert held[0].total == typedcompile.COMPILE_BASE + 200 * typedcompile.COMPILE_PER_EQN


def test_a_compile_that_could_never_fit_is_refused(monkeypatch):
    f, args, mesh = _program("explicit")
    budget = memorymodel.Budget(32 * 2**20, None, "test", "test")
    monkeypatch.setattr(typedcompile.memorypool, "budget", lambda name=None: budget)
    traced = typedcompile.trace(f, args, mesh, False)
    try:
        typedcompile.compile_mode(traced, mesh, 3, False)
    except memorymodel.BudgetError as err:
        assert "compiling a typed program" in str(err).lower()
    else:
        raise AssertionError("a compile over the budget ran")


def test_the_dump_folder_is_removed_after_the_compile(monkeypatch):
    made = []
    real = typedcompile._dump_folder
    monkeypatch.setattr(typedcompile, "_dump_folder", lambda: made.append(real()) or made[-1])
    f, args, mesh = _program()
    typedcompile.compile_mode(typedcompile.trace(f, args, mesh, True), mesh, 3, True)
    assert made and not os.path.exists(made[0])
