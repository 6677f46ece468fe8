"""The conflict playground against plain JAX: for each operand-spec case, JAX's verdict equals a
real call's (its exception's words, or the result's type), the resolutions are exactly the choices
JAX accepts, and each one's collectives, their bytes per device and its memory equal a plain
compile of the same line of code; on a TPU slice, the compiler's time equals a plain libtpu
compile's. Every expected value here is computed with jax and re, without pmapviz."""

import re
from collections import Counter

import jax
import jax.numpy as jnp
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz.core.budgets import memorypool
from pmapviz.core.budgets.memorymodel import Budget, BudgetError
from pmapviz.features.types import conflicts, conflictsettings

N = 8  # this test process's devices (tests/conftest.py)

# (settings, what JAX says as written): at least four operand-spec cases
CASES = {
    "contracting": {"c_pa": "P(None, 'd')", "c_pb": "P('d', None)"},
    "illegal_result": {"c_pa": "P('d', None)", "c_pb": "P(None, 'd')"},
    "accepted": {"c_pa": "P('d', None)", "c_pb": "P('d', None)"},
    "add": {
        "c_op": "add",
        "c_a": "64, 32",
        "c_b": "64, 32",
        "c_pa": "P('d')",
        "c_pb": "P(None, 'd')",
    },
    "einsum_2d": {
        "c_op": "einsum",
        "c_eq": "ij,kj->ik",
        "c_mesh": "2d",
        "c_a": "64, 32",
        "c_b": "16, 32",
        "c_pa": "P('d', 'm')",
        "c_pb": "P(None, 'm')",
    },
}


def case_of(name, n=N):
    texts = conflictsettings.schema(n).defaults() | CASES.get(name, {})
    values, case, errors = conflictsettings.values_or_defaults(texts, n)
    assert not errors, errors
    return case


# ---------------------------------------------------------------- plain JAX, no pmapviz
def plain_mesh(case):
    n = product(case.mesh.shape)
    return jax.make_mesh(case.mesh.shape, case.mesh.names, devices=jax.devices()[:n])


def plain_fn(case, kind, spec, operand):
    """The line of code a resolution is, written with jax.numpy."""

    def f(a, b):
        if kind == "reshard" and operand == 0:
            a = jax.reshard(a, P(*spec))
        if kind == "reshard" and operand == 1:
            b = jax.reshard(b, P(*spec))
        extra = {"out_sharding": P(*spec)} if kind == "out_sharding" else {}
        if case.op == "add":
            return a + b
        if case.op == "matmul":
            return jnp.matmul(a, b, **extra)
        return jnp.einsum(case.eq, a, b, **extra)

    return f


def plain_args(case, mesh):
    return [
        jax.ShapeDtypeStruct(s, jnp.float32, sharding=NamedSharding(mesh, P(*p)))
        for s, p in zip(case.shapes, case.specs, strict=True)
    ]


def plain_compile(case, fn, mesh):
    """Compiled, and never written to the suite's persistent cache (an executable for a TPU
    this machine has not cannot be read back)."""
    key = "jax_persistent_cache_min_compile_time_secs"
    was = getattr(jax.config, key)
    jax.config.update(key, 1e9)
    try:
        with jax.set_mesh(mesh):
            return jax.jit(fn).lower(*plain_args(case, mesh)).compile()
    finally:
        jax.config.update(key, was)


SIZES = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "pred": 1, "s8": 1, "u8": 1}
KIND = r"(all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all)"


def plain_collectives(hlo):
    """(kind, operand bytes on one device) of every collective in HLO text, by regex."""
    defs = {}
    for line in hlo.splitlines():
        if m := re.match(r"\s*(?:ROOT\s+)?%([\w.\-]+)\s*=\s*([a-z0-9]+)\[([0-9,]*)\]", line):
            dims = [int(d) for d in m[3].split(",") if d]
            defs[m[1]] = SIZES.get(m[2], 0) * product(dims)
    out = []
    for line in hlo.splitlines():
        if m := re.search(rf"=\s.*?\s{KIND}(?:-start)?\(([^()]*)\)", line):
            names = re.findall(r"%([\w.\-]+)", m[2])
            out.append((m[1], sum(defs[n] for n in names), line))
    return sorted(out)


def product(dims):
    total = 1
    for d in dims:
        total *= d
    return total


def real_call(case):
    """The call as written on real arrays: JAX's exception, or the result's type."""
    mesh = plain_mesh(case)
    with jax.set_mesh(mesh):
        a, b = (
            jax.device_put(jnp.zeros(s, jnp.float32), NamedSharding(mesh, P(*p)))
            for s, p in zip(case.shapes, case.specs, strict=True)
        )
        try:
            out = plain_fn(case, "as written", (), -1)(a, b)
        except Exception as err:  # noqa: BLE001
            return err
    return jax.typeof(out).str_short(short_dtypes=True)


def plain_legal(case, kind, spec, operand):
    mesh = plain_mesh(case)
    try:
        with jax.set_mesh(mesh):
            jax.make_jaxpr(plain_fn(case, kind, spec, operand))(*plain_args(case, mesh))
    except Exception:  # noqa: BLE001
        return False
    return True


# ---------------------------------------------------------------- the tests
@pytest.mark.parametrize("name", list(CASES))
def test_jax_verdict_equals_a_real_calls(name):
    case = case_of(name)
    found = conflicts.study(case)
    said = real_call(case)
    assert found.operand_types == tuple(
        jax.typeof(s).str_short(short_dtypes=True) for s in plain_args(case, plain_mesh(case))
    )
    if isinstance(said, str):
        assert found.verdict.accepted and found.verdict.out_type == said
        assert found.resolutions[0].choice.kind == "as written"
        return
    assert not found.verdict.accepted
    assert found.verdict.said.message == str(said)
    assert found.verdict.said.name == type(said).__name__ == "ShardingTypeError"
    assert found.verdict.explanation  # the plain words come first


@pytest.mark.parametrize("name", list(CASES))
def test_each_resolution_compiles_as_its_plain_line_of_code(name):
    case = case_of(name)
    found = conflicts.study(case)
    assert found.resolutions
    mesh = plain_mesh(case)
    for r in found.resolutions:
        c = r.choice
        compiled = plain_compile(case, plain_fn(case, c.kind, c.spec, c.operand), mesh)
        expected = plain_collectives(compiled.as_text())
        if r.unread:  # parse_hlo reads no `device_ids=(...)` after a mesh's replica_groups yet
            odd = [(k, b) for k, b, line in expected if "device_ids=(" in line]
            assert sorted(u.partition(":")[0] for u in r.unread) == [k for k, _ in odd]
            expected = [e for e in expected if "device_ids=(" not in e[2]]
        expected = [(k, b) for k, b, _ in expected]
        assert sorted((m.kind, m.bytes) for m in r.collectives) == expected, r.code
        assert r.sent_bytes == sum(b for _, b in expected)
        ma = compiled.memory_analysis()
        assert r.cost.argument_bytes == ma.argument_size_in_bytes, r.code
        assert r.cost.output_bytes == ma.output_size_in_bytes, r.code
        assert r.cost.temp_bytes == ma.temp_size_in_bytes, r.code
        with jax.set_mesh(mesh):
            args = plain_args(case, mesh)
            out = jax.make_jaxpr(plain_fn(case, c.kind, c.spec, c.operand))(*args)
        assert r.out_type == out.jaxpr.outvars[0].aval.str_short(short_dtypes=True)


@pytest.mark.parametrize("n", [1, 3])
def test_the_defaults_on_fewer_devices_match_plain_jax(n):
    """The default case on a mesh of this process's first n devices: JAX's words, and each
    resolution's collectives and bytes (none at all on one device)."""
    case = case_of("defaults", n)
    found = conflicts.study(case)
    assert found.devices == tuple(range(n))
    assert found.verdict.said.message == str(real_call(case))
    mesh = plain_mesh(case)
    for r in found.resolutions:
        c = r.choice
        compiled = plain_compile(case, plain_fn(case, c.kind, c.spec, c.operand), mesh)
        expected = [(k, b) for k, b, _ in plain_collectives(compiled.as_text())]
        assert sorted((m.kind, m.bytes) for m in r.collectives) == expected, r.code
    if n == 1:
        assert all(r.sent_bytes == 0 for r in found.resolutions)


@pytest.mark.parametrize("name", ["contracting", "illegal_result", "accepted", "add"])
def test_the_resolutions_are_every_choice_jax_accepts(name):
    """On the 1-D mesh every choice fits the caps: the table holds exactly what JAX accepts."""
    case = case_of(name)
    found = conflicts.study(case)
    specs = [(None, None), ("d", None), (None, "d")]
    want = set()
    if case.op != "add":
        as_written = found.verdict.out_spec if found.verdict.accepted else None
        want |= {
            ("out_sharding", s, -1)
            for s in specs
            if s != as_written and plain_legal(case, "out_sharding", s, -1)
        }
    for k in (0, 1):
        want |= {
            ("reshard", s, k)
            for s in specs
            if s != case.specs[k] and plain_legal(case, "reshard", s, k)
        }
    got = {(r.choice.kind, r.choice.spec, r.choice.operand) for r in found.resolutions}
    got.discard(("as written", (), -1))
    assert got == want
    assert found.left_out == 0
    tried = (0 if case.op == "add" else 3 - found.verdict.accepted) + 4
    assert found.refused == tried - len(want)


def test_the_resolutions_read_as_code():
    found = conflicts.study(case_of("contracting"))
    codes = {r.code for r in found.resolutions}
    assert "jnp.matmul(a, b, out_sharding=P())" in codes
    assert "jnp.matmul(a, b, out_sharding=P('d', None))" in codes
    assert "jnp.matmul(a, jax.reshard(b, P()))" in codes
    words = found.verdict.explanation
    assert "('j', 32 long) over d" in words and "out_sharding=" in words
    add = conflicts.study(case_of("add"))
    assert {r.code for r in add.resolutions} >= {"jax.reshard(a, P()) + b"}
    assert "dimension 0 over d" in add.verdict.explanation
    assert "out_sharding" not in add.verdict.explanation  # add has none


def test_the_best_is_the_fewest_bytes_then_the_least_memory():
    found = conflicts.study(case_of("contracting"))
    rows = found.resolutions
    key = [(r.sent_bytes, r.cost.peak_bytes) for r in rows]
    assert key[found.best()] == min(key)
    assert "fewest collective bytes" in found.best_rule()


def test_on_a_tpu_slice_the_compilers_time_equals_a_plain_libtpu_compile():
    from jax.experimental import mesh_utils, topologies

    case = case_of("contracting")
    found = conflicts.study(case, "v5e:2x4")
    assert not found.pod_problem
    assert found.pod_mesh.shape == (8,)
    devices = topologies.get_topology_desc(topology_name="v5e:2x4", platform="tpu").devices
    mesh = jax.sharding.Mesh(
        mesh_utils.create_device_mesh((8,), devices=devices), ("d",), (AxisType.Explicit,)
    )
    for r in found.resolutions:
        c = r.choice
        compiled = plain_compile(case, plain_fn(case, c.kind, c.spec, c.operand), mesh)
        assert r.pod.optimal_s == compiled.cost_analysis()["optimal_seconds"], r.code
        kinds = Counter(k for k, _, _ in plain_collectives(compiled.as_text()))
        assert Counter(m.kind for m in r.pod.collectives) == kinds, r.code
        assert r.pod.total_s == r.pod.optimal_s + sum(m.model_s for m in r.pod.collectives)
    totals = [r.pod.total_s for r in found.resolutions]
    assert totals[found.best()] == min(totals)
    assert "v5e:2x4" in found.best_rule()


def test_a_slice_the_operands_do_not_divide_is_said_in_one_line():
    texts = conflictsettings.schema(N).defaults() | {"c_a": "40, 24", "c_b": "24, 8"}
    values, case, errors = conflictsettings.values_or_defaults(texts, N)
    assert not errors
    found = conflicts.study(case, "v5e:4x4")  # 16 devices: 24 is not a multiple of 16
    assert found.pod_problem.startswith("On v5e:4x4 (d=16)")
    assert "\n" not in found.pod_problem
    assert all(r.pod is None for r in found.resolutions)


def test_studies_are_kept_and_bounded(monkeypatch):
    made = []
    monkeypatch.setattr(conflicts, "_KEPT", type(conflicts._KEPT)())
    monkeypatch.setattr(conflicts, "KEEP", 2)
    monkeypatch.setattr(conflicts, "_study", lambda case, used, topology: made.append(case) or case)
    cases = [case_of(name) for name in ("contracting", "accepted", "add")]
    for c in cases:
        assert conflicts.study(c) is c
    assert len(conflicts._KEPT) == 2 and len(made) == 3
    conflicts.study(cases[-1])  # kept: not studied again
    assert len(made) == 3
    conflicts.study(cases[0])  # the oldest was dropped
    assert len(made) == 4


def test_the_compiles_are_held_in_the_servers_memory_pool(monkeypatch):
    monkeypatch.setattr(
        memorypool, "budget", lambda name=None: Budget(conflicts.COMPILE_BYTES // 2)
    )
    texts = conflictsettings.schema(N).defaults() | {"c_a": "16, 8", "c_b": "8, 16"}
    _, case, _ = conflictsettings.values_or_defaults(texts, N)
    with pytest.raises(BudgetError, match="ways to write a @ b needs about"):
        conflicts.study(case)


def test_a_mesh_larger_than_this_server_is_refused_in_one_line():
    texts = conflictsettings.schema(16).defaults()
    _, case, _ = conflictsettings.values_or_defaults(texts, 16)
    with pytest.raises(conflicts.ConflictError, match="needs 16 devices and this server has 8"):
        conflicts.study(case)


def test_a_study_is_plain_data():
    import json

    found = conflicts.study(case_of("contracting"))
    data = json.loads(json.dumps(found.to_dict()))
    assert data["operand_types"] == list(found.operand_types)
    assert [r["code"] for r in data["resolutions"]] == [r.code for r in found.resolutions]
    assert data["verdict"]["said"]["message"] == found.verdict.said.message
