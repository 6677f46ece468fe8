"""Typed expressions: every allow-listed entry against JAX itself, the examples against real
jax.pmap, a long list of hostile texts (all refused, fast), fuzzing, columns, and the export
as a plain Python function run in a subprocess."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jax import lax

from pmapviz import catalog, expr
from pmapviz.expr import ATTRIBUTES, FUNCTIONS, METHODS, ExprError, ExprProgram
from pmapviz.planning import Plan, plan
from pmapviz.settings import SettingError
from tests.conftest import TEST_DEVICES

# ------------------------------------------------------------------ every allowed entry
# x, y: (3, 4) in (0.1, 0.9); w: (4, 2). Each case runs under jax.vmap(axis_name="i") over a
# leading axis of 2, so collectives have an axis; the direct version calls JAX itself.
_RNG = np.random.default_rng(0)
X, Y = (jnp.asarray(_RNG.uniform(0.1, 0.9, (2, 3, 4)), jnp.float32) for _ in range(2))
W = jnp.asarray(_RNG.uniform(0.1, 0.9, (2, 4, 2)), jnp.float32)

SPECIAL: dict[str, tuple[str, object]] = {
    "jnp.dot": ("jnp.dot(x, w)", lambda x, y, w: jnp.dot(x, w)),
    "jnp.matmul": ("jnp.matmul(x, w)", lambda x, y, w: jnp.matmul(x, w)),
    "jnp.reshape": ("jnp.reshape(x, (4, 3))", lambda x, y, w: jnp.reshape(x, (4, 3))),
    "jnp.transpose": ("jnp.transpose(x, (1, 0))", lambda x, y, w: jnp.transpose(x, (1, 0))),
    "jnp.swapaxes": ("jnp.swapaxes(x, 0, 1)", lambda x, y, w: jnp.swapaxes(x, 0, 1)),
    "jnp.moveaxis": ("jnp.moveaxis(x, 0, -1)", lambda x, y, w: jnp.moveaxis(x, 0, -1)),
    "jnp.expand_dims": ("jnp.expand_dims(x, 1)", lambda x, y, w: jnp.expand_dims(x, 1)),
    "jnp.roll": ("jnp.roll(x, 1, axis=1)", lambda x, y, w: jnp.roll(x, 1, axis=1)),
    "jnp.where": ("jnp.where(x > 0.5, x, y)", lambda x, y, w: jnp.where(x > 0.5, x, y)),
    "jnp.clip": ("jnp.clip(x, 0.2, max=0.6)", lambda x, y, w: jnp.clip(x, 0.2, max=0.6)),
    "jnp.round": ("jnp.round(x, 2)", lambda x, y, w: jnp.round(x, 2)),
    "jnp.einsum": ("jnp.einsum('ij,jk->ik', x, w)", lambda x, y, w: jnp.einsum("ij,jk->ik", x, w)),
    "jnp.tensordot": ("jnp.tensordot(x, w, axes=1)", lambda x, y, w: jnp.tensordot(x, w, 1)),
    "jnp.concatenate": ("jnp.concatenate((x, y), axis=1)",
                        lambda x, y, w: jnp.concatenate((x, y), axis=1)),
    "jnp.stack": ("jnp.stack([x, y], 2)", lambda x, y, w: jnp.stack([x, y], 2)),
    "jnp.sum": ("jnp.sum(x, axis=0, keepdims=True, dtype='float32')",
                lambda x, y, w: jnp.sum(x, axis=0, keepdims=True, dtype="float32")),
    "jnp.std": ("jnp.std(x, 1, ddof=1)", lambda x, y, w: jnp.std(x, 1, ddof=1)),
    "jnp.cumsum": ("jnp.cumsum(x, axis=1)", lambda x, y, w: jnp.cumsum(x, axis=1)),
    "jnp.zeros_like": ("jnp.zeros_like(x, dtype='int32')",
                       lambda x, y, w: jnp.zeros_like(x, dtype="int32")),
    "jnp.squeeze": ("jnp.squeeze(x[None], 0)", lambda x, y, w: jnp.squeeze(x[None], 0)),
    "lax.psum": ("lax.psum(x, 'i')", lambda x, y, w: lax.psum(x, "i")),
    "lax.pmean": ("lax.pmean(x, axis_name='i')", lambda x, y, w: lax.pmean(x, axis_name="i")),
    "lax.pmax": ("lax.pmax(x, 'i')", lambda x, y, w: lax.pmax(x, "i")),
    "lax.pmin": ("lax.pmin(x, 'i')", lambda x, y, w: lax.pmin(x, "i")),
    "lax.all_gather": ("lax.all_gather(x, 'i', axis=1, tiled=True)",
                       lambda x, y, w: lax.all_gather(x, "i", axis=1, tiled=True)),
    "lax.ppermute": ("lax.ppermute(x, 'i', perm=[(0, 1), (1, 0)])",
                     lambda x, y, w: lax.ppermute(x, "i", perm=[(0, 1), (1, 0)])),
    "lax.psum_scatter": ("lax.psum_scatter(x, 'i', scatter_dimension=1, tiled=True)",
                         lambda x, y, w: lax.psum_scatter(x, "i", scatter_dimension=1,
                                                          tiled=True)),
    "lax.all_to_all": ("lax.all_to_all(x, 'i', 1, 1, tiled=True)",
                       lambda x, y, w: lax.all_to_all(x, "i", 1, 1, tiled=True)),
    "lax.axis_index": ("lax.axis_index('i') + x", lambda x, y, w: lax.axis_index("i") + x),
    "jax.nn.gelu": ("jax.nn.gelu(x, approximate=False)",
                    lambda x, y, w: jax.nn.gelu(x, approximate=False)),
    "jax.nn.leaky_relu": ("jax.nn.leaky_relu(x - 0.5, 0.1)",
                          lambda x, y, w: jax.nn.leaky_relu(x - 0.5, 0.1)),
    "jax.nn.softmax": ("jax.nn.softmax(x, axis=0)", lambda x, y, w: jax.nn.softmax(x, axis=0)),
    "jax.nn.logsumexp": ("jax.nn.logsumexp(x, 1, keepdims=True)",
                         lambda x, y, w: jax.nn.logsumexp(x, 1, keepdims=True)),
    "jax.vmap": ("jax.vmap(jax.vmap(jnp.multiply), in_axes=(0, 0))(x, y)",
                 lambda x, y, w: jax.vmap(jax.vmap(jnp.multiply), in_axes=(0, 0))(x, y)),
}  # fmt: skip


def _default_case(key: str) -> tuple[str, object]:
    """jnp.f(x) or jnp.f(x, y): called directly through the module the key names."""
    module, _, name = key.rpartition(".")
    real = getattr({"jnp": jnp, "lax": lax, "jax.nn": jax.nn}[module], name)
    if FUNCTIONS[key].min_pos == 2:
        return f"{key}(x, y)", lambda x, y, w: real(x, y)
    return f"{key}(x)", lambda x, y, w: real(x)


METHOD_CASES: dict[str, tuple[str, object]] = {
    "reshape": ("x.reshape(2, 6)", lambda x, y, w: x.reshape(2, 6)),
    "transpose": ("x.transpose(1, 0)", lambda x, y, w: x.transpose(1, 0)),
    "swapaxes": ("x.swapaxes(0, 1)", lambda x, y, w: x.swapaxes(0, 1)),
    "astype": ("x.astype('int32')", lambda x, y, w: x.astype("int32")),
    "dot": ("x.dot(w)", lambda x, y, w: x.dot(w)),
    "clip": ("x.clip(0.3, 0.7)", lambda x, y, w: x.clip(0.3, 0.7)),
    "round": ("x.round(decimals=1)", lambda x, y, w: x.round(decimals=1)),
    "sum": ("x.sum(0, dtype='float32')", lambda x, y, w: x.sum(0, dtype="float32")),
    "T": ("x.T", lambda x, y, w: x.T),
    "mT": ("x.mT", lambda x, y, w: x.mT),
    "shape": ("x.reshape(x.shape[1], x.shape[0])", lambda x, y, w: x.reshape(4, 3)),
    "ndim": ("x * x.ndim", lambda x, y, w: x * 2),
    "size": ("x.reshape(x.size)", lambda x, y, w: x.reshape(12)),
}


def _method_case(name: str) -> tuple[str, object]:
    if name in METHOD_CASES:
        return METHOD_CASES[name]
    return f"x.{name}()", lambda x, y, w: getattr(x, name)()


def _check_same(text: str, direct) -> None:
    f = expr.program("x, y, w", text).build("i")
    got = jax.vmap(f, axis_name="i")(X, Y, W)
    want = jax.vmap(direct, axis_name="i")(X, Y, W)
    assert jax.tree.structure(got) == jax.tree.structure(want)
    for g, v in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        assert g.dtype == v.dtype and g.shape == v.shape
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(v, np.float64),
                                   rtol=1e-6, atol=1e-7)  # fmt: skip


@pytest.mark.parametrize("key", sorted(FUNCTIONS))
def test_every_allowed_function_matches_jax(key):
    text, direct = SPECIAL.get(key) or _default_case(key)
    assert text.startswith(key)
    _check_same(text, direct)


@pytest.mark.parametrize("name", [*sorted(METHODS), *ATTRIBUTES])
def test_every_allowed_method_and_attribute_matches_jax(name):
    text, direct = _method_case(name)
    assert f".{name}" in text
    _check_same(text, direct)


def test_allow_list_is_data_with_collectives_marked():
    collectives = {k for k, f in FUNCTIONS.items() if f.collective}
    names = ["psum", "pmean", "pmax", "pmin", "all_gather", "ppermute", "psum_scatter",
             "all_to_all", "axis_index"]  # fmt: skip
    assert collectives == {f"lax.{n}" for n in names}
    assert all(FUNCTIONS[k].note for k in collectives)
    banned = {"zeros", "ones", "full", "empty", "arange", "linspace", "eye", "tile", "repeat",
              "pad", "broadcast_to", "load", "save", "fromfile", "frombuffer", "outer"}  # fmt: skip
    assert not {k for k in FUNCTIONS if k.rpartition(".")[2] in banned}
    assert "jax.nn.one_hot" not in FUNCTIONS
    assert len(FUNCTIONS) + len(METHODS) + len(ATTRIBUTES) > 100


# ------------------------------------------------------------------ the six examples, real pmap
N = TEST_DEVICES
EXAMPLES = [
    ("x, w, b", "jnp.tanh(x @ w + b)", [(N, 3, 4), (4, 5), (5,)], (0, None, None), 0,
     lambda x, w, b: jnp.tanh(x @ w + b)),
    ("x, y", "jax.vmap(jnp.dot)(x, y)", [(N, 10, 3), (N, 10, 3)], (0, 0), 0,
     lambda x, y: jax.vmap(jnp.dot)(x, y)),
    ("x", "x / lax.psum(jnp.sum(x), 'i')", [(N, 4)], (0,), 0,
     lambda x: x / lax.psum(jnp.sum(x), "i")),
    ("x, w", "jnp.einsum('bij,jk->bik', x, w)", [(N, 2, 3, 4), (4, 5)], (0, None), 0,
     lambda x, w: jnp.einsum("bij,jk->bik", x, w)),
    ("x", "(x * 2, x.sum())", [(N, 4)], (0,), 0, lambda x: (x * 2, x.sum())),
    ("x", "lax.all_gather(x, 'i').mean(0)", [(N, 4)], (0,), None,
     lambda x: lax.all_gather(x, "i").mean(0)),
]  # fmt: skip


@pytest.mark.parametrize("args, body, shapes, in_axes, out_axes, direct", EXAMPLES,
                         ids=[e[1] for e in EXAMPLES])  # fmt: skip
def test_examples_plan_and_run_like_python(args, body, shapes, in_axes, out_axes, direct):
    prog = expr.program(args, body)
    p = plan(prog, shapes, in_axes=in_axes, out_axes=out_axes, axis_name="i", n_devices=N)
    assert p.ok, p.problems
    rng = np.random.default_rng(1)
    values = [rng.standard_normal(s).astype(np.float32) for s in shapes]
    got = jax.pmap(prog.build("i"), in_axes=in_axes, out_axes=out_axes, axis_name="i")(*values)
    want = jax.pmap(direct, in_axes=in_axes, out_axes=out_axes, axis_name="i")(*values)
    assert p.out_shapes == jax.tree.map(lambda a: tuple(a.shape), want)
    for g, v in zip(jax.tree.leaves(got), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(v), rtol=1e-6)


def test_program_is_a_catalog_program():
    prog = expr.program(" x , w ", "x@w+jnp.sum( w )")
    assert isinstance(prog, catalog.Program) and isinstance(prog, ExprProgram)
    assert prog.source == "x @ w + jnp.sum(w)" == prog.body("i") == prog.body(None)
    assert prog.arg_names == ("x", "w") and prog.n_args == 2
    assert prog.signature() == "def f(x, w):"
    assert prog.key == expr.program("x,w", "x @ w + jnp.sum(w)").key  # canonical: same key
    assert prog.key.startswith("expr:") and prog.key != expr.program("x, w", "x @ w").key
    assert not prog.needs_axis_name and prog.axis_names == ()
    assert prog.default_shapes == ((8, 4), (8, 4)) and prog.default_in_axes == (0, 0)
    assert prog.build("i") is prog.build("i")  # cached, so traces are cached too
    assert prog.build("i") is expr.program("x, w", prog.source).build("i")
    coll = expr.program("x", "lax.pmean(x, 'j') + lax.psum(x, axis_name='i')")
    assert coll.needs_axis_name and coll.axis_names == ("i", "j")
    assert "'i', 'j'" in coll.description


def test_plan_reports_missing_and_mismatched_axis_names():
    prog = expr.program("x", "lax.psum(x, 'j')")
    p = plan(prog, [(N, 4)], axis_name=None, n_devices=N)
    assert [q.code for q in p.problems] == ["needs_axis_name"]
    p = plan(prog, [(N, 4)], axis_name="i", n_devices=N)
    assert [q.code for q in p.problems] == ["unbound_axis_name"]
    assert "'j'" in p.problems[0].message


# ------------------------------------------------------------------ hostile texts
_DUNDERS = ["__class__", "__dict__", "__globals__", "__builtins__", "__mro__", "__subclasses__",
            "__init__", "__getattribute__", "__reduce__", "__code__", "__closure__", "__module__",
            "__self__", "__func__", "__doc__", "_private"]  # fmt: skip
_BASES = ["x", "jnp", "lax", "jax", "jax.nn", "()", "x.sum()", "jnp.sum", "'a'", "x.shape"]
HOSTILE = [f"{b}.{d}" for b in _BASES for d in _DUNDERS] + [
    # escapes and builtins
    "().__class__.__bases__[0].__subclasses__()", "x.__class__.__mro__", "jnp.sum.__call__",
    "[].__class__", "{}.__class__", "jnp.sum.__globals__['os']",
    "__import__('os')", "__import__('os').system('ls')", "open('/etc/passwd')",
    "open('/etc/passwd').read()", "exec('1')", "eval('1')", "compile('1', 'f', 'eval')",
    "globals()", "locals()", "vars()", "dir()", "getattr(x, '__class__')",
    "setattr(x, 'a', 1)", "delattr(x, 'a')", "type(x)", "object", "print(x)", "input()",
    "breakpoint()", "help()", "exit()", "quit()", "os.system('ls')", "sys.modules",
    "np.ones(3)", "np.load('f')", "numpy.save('f', x)", "jax.numpy.load('f')",
    "jax.numpy.save('f', x)", "jnp.load('f')", "jnp.save('f', x)", "jnp.save",
    "jnp.savez('f', x)", "jnp.fromfile('f')", "jnp.frombuffer(x)", "jax.config",
    "jax.config.update('jax_enable_x64', True)", "jax.debug.callback(print, x)",
    "jax.pure_callback(print, x, x)", "jax.experimental", "jax.device_put(x)",
    "jax.jit(jnp.sum)(x)", "jax.profiler.trace('/tmp')", "jax.distributed.initialize()",
    "jax.clear_caches()", "jax.devices()", "jax.device_get(x)", "jax.tree.map(jnp.sum, x)",
    "jax.make_jaxpr(jnp.sum)(x)", "jax.eval_shape(jnp.sum, x)", "jnp.linalg.inv(x)",
    "jnp.fft.fft(x)", "jax.random.normal(x)", "lax.scan(jnp.sum, x, x)", "lax.cond(x, x, x)",
    "lax.while_loop(x, x, x)", "lax.fori_loop(0, 999999999, x, x)", "lax.map(jnp.sum, x)",
    # allocations and huge numbers
    "jnp.ones((10**12,))", "jnp.ones((999999999999,))", "jnp.zeros(1e20)",
    "jnp.zeros((100000, 100000))", "jnp.empty(10**8)", "jnp.full((10**6, 10**6), 1)",
    "jnp.arange(10**15)", "jnp.arange(999999999999)", "jnp.linspace(0, 1, 10**8)",
    "jnp.eye(10**6)", "jnp.tile(x, 10**8)", "jnp.repeat(x, 999999999999)",
    "jnp.broadcast_to(x, (10**6, 10**6))", "jnp.pad(x, 10**8)",
    "jnp.zeros_like(x, shape=(999999999999,))", "jnp.zeros_like(x, None, (999999999999,))",
    "jnp.ones_like(x, 'float32', (100000, 100000))", "jax.nn.one_hot(x, 999999999)",
    "x.reshape(10**9, 10**9)", "x.reshape(1000000000, 1000000000)",
    "jnp.reshape(x, (999999999999, 999999999999))", "x.repeat(10**8)", "x.tile(3)",
    "jnp.sum(x, where=x > 0)", "jnp.sum(x, out=x)", "jnp.sum(x, initial=1e20)",
    "jnp.sum(x, 0, 'float32')", "jax.vmap(jnp.sum, axis_size=999999999)(x)",
    "jax.vmap(jnp.zeros_like)(x, None, (999999999999,))", "9**9**9", "2**10000000",
    "x ** 9", "x ** 100", "x ** -9", "x ** x", "10**100", "2 ** 1e10", "x ** 1e9",
    "'a'*10**9", "[1]*10**9", "(1,)*10**9", "'a'*999999999999", "[x]*999999999999",
    "{'a': x} * 2", "'a' + 'b'", "1" * 500, "1" * 13, "0x" + "f" * 20, "1e400", "-1e400",
    "1j", "x * 2j",
    # literals
    "'" + "a" * 65 + "'", "'\\x00'", "'\\u202e'", "'\\N{BELL}'", "b'x'", "rb'x'", "f'{x}'",
    "f'{x.__class__}'", "...", "Ellipsis", "None.__class__", "True.__class__",
    "(1).__class__", "(1).real", "''.join", "'a'.upper()", "'{}'.format(x)", "'%s' % x",
    # statements and syntax
    "x; y", "x\nimport os", "import os", "from os import system", "def f(): pass",
    "class A: pass", "@jnp.sum\ndef f(): pass", "x = 1", "x += 1", "del x", "assert x",
    "raise x", "return x", "pass", "global x", "with x: pass", "for i in x: pass",
    "while 1: pass", "try: x\nexcept: y", "if x: y", "", "   ", "x +", "(x", "x)",
    # lambdas, comprehensions, unpacking, control flow
    "lambda: 1", "lambda x: x.__class__", "jax.vmap(lambda a: a)(x)", "[i for i in x]",
    "{i for i in x}", "{i: i for i in x}", "(i for i in x)", "jnp.sum(i for i in x)",
    "(y := x)", "*x", "[*x]", "(*x,)", "{**x}", "jnp.dot(*x)", "jnp.sum(x, **{'axis': 0})",
    "(yield x)", "(yield from x)", "await x", "x if x else x", "x and x", "x or x", "not x",
    # operators, comparisons, indexing, methods
    "~x", "x << 2", "x >> 2", "x & x", "x | x", "x ^ x", "0 < x < 1", "x in x", "x is x",
    "x is not x", "x not in x", "{1, 2}", "x[x]", "x['a', 0]", "x['a':]", "x[1:2:x]",
    "x[jnp.sum(x)]",
    "x[1, 2, 3, 4, 5, 6, 7, 8, 9]", "x[...:2]", "x[True]", "x.foo", "x.at[0].set(1)",
    "x.item()", "x.tolist()", "x.tobytes()", "x.addressable_shards", "x.device",
    "x.devices()", "x.block_until_ready()", "x.dtype", "x.astype('object')",
    "x.astype('str')", "x.astype(object)", "x.astype(x.dtype)", "jnp.sum(x, dtype='object')",
    "jnp.sum(x, dtype=object)", "jnp.dot", "jnp", "jax", "lax", "jax.nn", "jnp.sum(jnp)",
    "jax.vmap(x)", "jax.vmap(x.sum)(x)", "jax.vmap(lax.psum)(x)", "jax.vmap(jax.vmap)",
    "jax.vmap(jnp.sum, axis_name='j')(x)", "jax.vmap(jnp.sum, in_axes=x)(x)", "lax.psum(x)",
    "lax.psum(x, y)", "lax.psum(x, 'i j')", "lax.psum(x, '')", "lax.psum(x, 'i' * 3)",
    "lax.psum(x, 'i', 'j')", "lax.axis_index(x)", "lax.psum(x, axis_name=x)",
    "jnp.sum(x, 'i')", "jnp.sum(x, axis=('i', 0))", "jnp.mean(x, axis='i')",
    "jax.vmap(jnp.sum)(x, 'i')", "jnp.where(x, 'a', x)", "jnp.sum(x)(x)", "x(1)", "1(x)",
    "'a'(x)", "y", "f(x)", "jnp.sum(x, axis=0, axis=1)",
    # unicode tricks and control characters
    "\uff4a\uff4e\uff50.sum(x)", "jnp.\uff53\uff55\uff4d(x)", "\uff58", "\u0445",
    "jn\u0440.sum(x)", "x\u200b", "\u200bx", "x\u200d+x", "x\u202e", "\u202ex", "x\u2066",
    "x\x00", "\x00", "x\t+ x", "x\r", "x\x0c", "x\x1b[31m", "x + '\u00e9'", "\u00e9", "\u210c",
    "x\uff0bx", "x\u00a0+x", "\U0001d431", "x\ufeff", "\ufeffx", "x\u2028", "x\x85",
    # length and depth
    "(" * 1000 + "x" + ")" * 1000, "-" * 1000 + "x", "-" * 499 + "x", "x" * 100_000,
    "x+" * 300 + "x", "[" * 25 + "x" + "]" * 25, "(" * 21 + "x" + ")" * 21,
    "jnp.sum(" * 25 + "x" + ")" * 25, "x" + ".T" * 100, "x" + "[0]" * 30,
    "(" + "x," * 240 + ")", "jnp.einsum('" + "a" * 70 + "', x)", " " * 600 + "x",
    "x" + " " * 600, "+".join(["x"] * 30), "jnp.tanh(" * 21 + "x" + ")" * 21,
]  # fmt: skip


def test_hostile_list_is_long_and_distinct():
    assert len(HOSTILE) >= 200
    assert len(set(HOSTILE)) == len(HOSTILE)


@pytest.mark.parametrize("text", HOSTILE, ids=[ascii(t[:40]) for t in HOSTILE])
def test_hostile_expressions_are_refused_fast(text):
    times = []
    for _ in range(3):  # best of 3: a garbage-collector pause is not the refusal's cost
        t = time.process_time()  # CPU time: other processes on the machine do not count
        with pytest.raises(ExprError) as info:
            expr.program("x", text)
        times.append(time.process_time() - t)
    elapsed = min(times)
    assert elapsed < 0.05, f"{elapsed * 1000:.1f} ms"
    message = str(info.value)
    assert isinstance(info.value, SettingError)
    assert "\n" not in message and len(message) < 2000
    assert all(" " <= ch <= "~" for ch in message), message  # user text was quoted safely


RUN_TIME_REFUSALS = ["x.shape * 999999999999", "(x.size ** 8) ** 8", "x.shape + x.shape",
                     "x.ndim * x.shape", "x.shape[0] // 0", "jnp.sum(x) + x.shape"]  # fmt: skip


@pytest.mark.parametrize("text", RUN_TIME_REFUSALS)
def test_python_values_are_bounded_when_run(text):
    """Python ints and tuples (from x.shape, x.size) never grow or repeat: refused when run."""
    f = expr.program("x", text).build(None)
    t = time.process_time()
    with pytest.raises(ExprError):
        f(jnp.ones((4, 3)))
    assert time.process_time() - t < 5  # a JAX compile at most, never a big computation


def _nested(fn: str, times: int) -> str:
    return f"{fn}(" * times + "x" + ", 'i')" * times


@pytest.mark.parametrize("body, column", [
    (f"jnp.sum({_nested('lax.all_gather', 14)})", None),
    ("jnp.sum((x[:, None] * x)[:, :, None] * x)", 9),
    ("jnp.einsum('i,j,k->ijk', x, x, x)", 1),
    ("jnp.expand_dims(x, (" + ", ".join(map(str, range(40))) + "))", 1),
])  # fmt: skip
def test_huge_intermediates_are_refused_while_tracing(body, column):
    """Shapes are static while tracing: an intermediate above 2**40 elements or 32 axes is
    refused before XLA sees it (an int64 overflow there would abort the process)."""
    p = plan(expr.program("x", body), [(N, 2**15)], axis_name="i", n_devices=N)
    assert [q.code for q in p.problems] == ["function_rejects_shapes"]
    assert "would make an array of shape" in p.problems[0].message
    if column:
        assert f"column {column}:" in p.problems[0].message


# ------------------------------------------------------------------ fuzzing
def _outcome(args: str, text: str):
    try:
        return expr.program(args, text)
    except ExprError:
        return None


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=600) | st.text(alphabet="xyjnplax.,()[]{}:'\"_*+-/@<>=!~ 019eJ",
                                       max_size=60))  # fmt: skip
def test_random_text_is_refused_or_accepted_never_crashes(text):
    t = time.thread_time()
    _outcome("x, y", text)
    assert time.thread_time() - t < 0.05
    _outcome(text, "x")


_ATOMS = ["x", "y", "1", "2.5", "-3", "'i'", "None", "True", "...", "os", "__import__",
          "jnp", "lax", "jax", "jax.nn", "'a' * 3", "999999999999999", "(x, y)", "[x]"]  # fmt: skip
_NAMES = [*FUNCTIONS, "jnp.ones", "jnp.zeros", "jax.numpy.load", "getattr", "open", "np.sum"]
_ATTRS = [*METHODS, *ATTRIBUTES, "__class__", "_x", "at", "item", "foo"]
_OPS = ["+", "-", "*", "/", "//", "%", "**", "@", "<", "==", "<<", "and", "if x else", "in"]


@st.composite
def _random_expr(draw, depth=0):
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(_ATOMS))
    kind = draw(st.sampled_from(["call", "method", "attr", "op", "index", "tuple", "unary",
                                 "kw", "lambda", "vmap"]))  # fmt: skip
    sub = [draw(_random_expr(depth + 1)) for _ in range(draw(st.integers(1, 3)))]
    if kind == "call":
        return f"{draw(st.sampled_from(_NAMES))}({', '.join(sub)})"
    if kind == "method":
        return f"({sub[0]}).{draw(st.sampled_from(list(METHODS)))}({', '.join(sub[1:])})"
    if kind == "attr":
        return f"({sub[0]}).{draw(st.sampled_from(_ATTRS))}"
    if kind == "op":
        return f"({sub[0]}) {draw(st.sampled_from(_OPS))} ({sub[-1]})"
    if kind == "index":
        return f"({sub[0]})[{draw(st.sampled_from(['0', '-1', '1:3', '::2', 'None', '...', 'x']))}]"
    if kind == "tuple":
        return f"({', '.join(sub)},)"
    if kind == "unary":
        return f"{draw(st.sampled_from(['-', '+', 'not ', '~']))}({sub[0]})"
    if kind == "kw":
        key = draw(st.sampled_from(["axis", "keepdims", "dtype", "axis_name", "tiled", "shape"]))
        return f"{draw(st.sampled_from(_NAMES))}({sub[0]}, {key}={sub[-1]})"
    if kind == "lambda":
        return f"(lambda q: {sub[0]})"
    return f"jax.vmap({draw(st.sampled_from(_NAMES))})({', '.join(sub)})"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_random_expr())
def test_random_expressions_are_refused_or_planned(text):
    t = time.thread_time()  # this thread's CPU only: JAX's own threads may be busy
    prog = _outcome("x, y", text)
    assert time.thread_time() - t < 0.05
    if prog is not None:  # accepted: planning never raises, whatever JAX thinks of it
        p = plan(prog, [(2, 3, 4), (2, 3, 4)], axis_name="i", n_devices=2)
        assert isinstance(p, Plan)


_IDENT = st.sampled_from(
    [
        "x",
        "y",
        "jnp",
        "lax",
        "jax",
        "nn",
        "os",
        "__import__",
        "sum",
        "vmap",
        "psum",
        "__class__",
        "T",
        "shape",
        "reshape",
        "_x",
        "load",
    ]
)
_CONST = st.one_of(
    st.integers(-(10**15), 10**15),
    st.floats(),
    st.text(max_size=70),
    st.binary(max_size=4),
    st.none(),
    st.booleans(),
    st.just(...),
    st.complex_numbers(max_magnitude=10),
)
_LOAD = ast.Load()


def _ast_children(c):
    """Every kind of node, allowed or not, built as a tree (not as text)."""
    comp = [ast.comprehension(ast.Name("q", ast.Store()), ast.Name("x", _LOAD), [], 0)]
    lam = ast.arguments([], [ast.arg("q")], None, [], [], None, [])
    ops = st.sampled_from([ast.Add(), ast.Pow(), ast.LShift(), ast.MatMult(), ast.BitAnd()])
    return st.one_of(
        st.tuples(c, _IDENT).map(lambda t: ast.Attribute(t[0], t[1], _LOAD)),
        st.tuples(c, st.lists(c, max_size=3), st.lists(st.tuples(_IDENT, c), max_size=2)).map(
            lambda t: ast.Call(t[0], t[1], [ast.keyword(k, v) for k, v in t[2]])),
        st.tuples(c, ops, c).map(lambda t: ast.BinOp(*t)),
        st.tuples(st.sampled_from([ast.USub(), ast.Not(), ast.Invert()]), c).map(
            lambda t: ast.UnaryOp(*t)),
        st.tuples(c, c).map(lambda t: ast.Subscript(t[0], t[1], _LOAD)),
        st.lists(c, max_size=3).map(lambda e: ast.Tuple(e, _LOAD)),
        st.tuples(c, c).map(lambda t: ast.Dict([t[0]], [t[1]])),
        c.map(lambda v: ast.Lambda(lam, v)),
        st.tuples(c, c).map(lambda t: ast.BoolOp(ast.And(), list(t))),
        st.tuples(c, c, c).map(lambda t: ast.IfExp(*t)),
        c.map(lambda v: ast.Starred(v, _LOAD)),
        st.tuples(c, c).map(lambda t: ast.Compare(t[0], [ast.Lt()], [t[1]])),
        c.map(lambda v: ast.ListComp(v, comp)),
        c.map(lambda v: ast.NamedExpr(ast.Name("q", ast.Store()), v)),
    )  # fmt: skip


_LEAVES = st.one_of(_IDENT.map(lambda n: ast.Name(n, _LOAD)), _CONST.map(ast.Constant))
_TREES = st.recursive(_LEAVES, _ast_children, max_leaves=25)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_TREES)
def test_random_syntax_trees_are_refused_or_accepted_never_crash(tree):
    try:
        text = ast.unparse(ast.Expression(tree))
    except Exception:  # a tree Python itself cannot print: nothing to type
        return
    t = time.thread_time()  # this thread's CPU only: JAX's own threads may be busy
    prog = _outcome("x, y", text)
    assert time.thread_time() - t < 0.05
    if prog is not None:
        assert isinstance(plan(prog, [(2, 3), (2, 3)], axis_name="i", n_devices=2), Plan)


# ------------------------------------------------------------------ columns and argument names
@pytest.mark.parametrize("text, column, token", [
    ("jnp.tanh(os.x)", 10, "`os`"),
    ("x + jnp.load('f')", 9, "`load`"),
    ("x.sum().__class__", 9, "`__class__`"),
    ("x  <<  2", 4, "`<<`"),
    ("jnp.sum(x, where=x)", 12, "`where`"),
    ("  lax.psum(x, y)", 15, "`y`"),
    ("x + \u0445", 5, "U+0445"),
    ("x ** 10", 6, "`10`"),
    ("x; y", 2, "not a valid expression"),
    ("jax.vmap(lambda a: a)(x)", 10, "`lambda a: a`"),
])  # fmt: skip
def test_messages_point_at_the_column(text, column, token):
    with pytest.raises(ExprError) as info:
        expr.program("x, w, b", text)
    assert info.value.column == column
    assert str(info.value).startswith(f"column {column}: ")
    assert token in str(info.value)
    assert "allowed here:" in str(info.value)


def test_unknown_name_lists_the_arguments():
    with pytest.raises(ExprError, match="the arguments x, w, b, numbers"):
        expr.program("x, w, b", "jnp.tanh(os.x)")


@pytest.mark.parametrize("text, names", [
    ("x, w, b", ("x", "w", "b")), ("(x, y)", ("x", "y")), (" x ", ("x",)),
    ("x,", ("x",)), ("a1, b_2, c, d, e, g", ("a1", "b_2", "c", "d", "e", "g")),
])  # fmt: skip
def test_argument_names_parse(text, names):
    assert expr.parse_arg_names(text) == names


@pytest.mark.parametrize("text", [
    "", " ", "x, x", "jnp", "x, lax", "jax", "np", "lambda", "def", "match", "print", "sum",
    "open", "_x", "__class__", "1x", "x-y", "x y", "a, b, c, d, e, g, h", "x,,y", "\u0445",
    "\uff58", "x\x00", "x" * 40, None,
])  # fmt: skip
def test_bad_argument_names_are_refused(text):
    with pytest.raises(ExprError):
        expr.parse_arg_names(text)


# ------------------------------------------------------------------ export as plain Python
_RANDOM_PARTS = {
    "unary": ["jnp.tanh", "jnp.sin", "jnp.abs", "jax.nn.relu", "jnp.square", "jax.nn.sigmoid"],
    "binary": ["+", "-", "*"],
    "reduce": ["jnp.sum({}, axis=-1, keepdims=True)", "({}).mean(0)", "jnp.max({})"],
}


def _random_body(rng: random.Random, depth: int = 0) -> str:
    if depth >= 3 or rng.random() < 0.25:
        return rng.choice(["x", "y", "x.T.T", "2.0", "(x @ y.T)[0]"])
    roll = rng.random()
    if roll < 0.35:
        return f"{rng.choice(_RANDOM_PARTS['unary'])}({_random_body(rng, depth + 1)})"
    if roll < 0.8:
        op = rng.choice(_RANDOM_PARTS["binary"])
        return f"({_random_body(rng, depth + 1)} {op} {_random_body(rng, depth + 1)})"
    return rng.choice(_RANDOM_PARTS["reduce"]).format(_random_body(rng, depth + 1))


def test_python_source_runs_as_a_plain_script(tmp_path):
    """The export is a user's own script: run it in a subprocess, compare with the
    interpreter. Includes the collective examples (under vmap with axis_name='i')."""
    xs = np.random.default_rng(2).uniform(-1, 1, (2, 3, 3)).astype(np.float32)
    ys = np.random.default_rng(3).uniform(-1, 1, (2, 3, 3)).astype(np.float32)
    rng, bodies, want = random.Random(15), [], {}
    fixed = ["x / lax.psum(jnp.sum(x), 'i')", "lax.all_gather(x, 'i').mean(0) + y",
             "(x * 2, {'s': x.sum()})", "jax.vmap(jnp.dot)(x, y)"]  # fmt: skip
    while len(bodies) < 8 + len(fixed):
        body = fixed[len(bodies) - 8] if len(bodies) >= 8 else _random_body(rng)
        try:  # random bodies may not fit the shapes (e.g. a sum over a scalar): skip those
            got = jax.vmap(expr.program("x, y", body).build("i"), axis_name="i")(xs, ys)
        except (TypeError, ValueError):
            continue
        for j, leaf in enumerate(jax.tree.leaves(got)):
            want[f"{len(bodies)}_{j}"] = np.asarray(leaf)
        bodies.append(body)
    np.savez(tmp_path / "in.npz", x=xs, y=ys)
    lines = [expr.IMPORTS, "import sys", "import numpy as np", "d = np.load(sys.argv[1])",
             "out = {}"]  # fmt: skip
    for k, body in enumerate(bodies):
        lines += [expr.python_source(expr.program("x, y", body), "i"),
                  "res = jax.vmap(f, axis_name='i')(d['x'], d['y'])",
                  f"out.update({{'{k}_' + str(j): np.asarray(v) "
                  "for j, v in enumerate(jax.tree.leaves(res))})"]  # fmt: skip
    lines.append("np.savez(sys.argv[2], **out)")
    script = tmp_path / "exported.py"
    script.write_text("\n".join(lines) + "\n")
    r = subprocess.run([sys.executable, str(script), str(tmp_path / "in.npz"),
                        str(tmp_path / "out.npz")], capture_output=True, text=True,
                       timeout=120, env={"JAX_PLATFORMS": "cpu"})  # fmt: skip
    assert r.returncode == 0, r.stderr[-2000:]
    got = dict(np.load(tmp_path / "out.npz"))
    assert sorted(got) == sorted(want), json.dumps(bodies)
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


def test_python_source_shape():
    prog = expr.program("x, w, b", "jnp.tanh(x@w+b)")
    assert expr.python_source(prog, "i") == "def f(x, w, b):\n    return jnp.tanh(x @ w + b)\n"
    assert expr.python_source(catalog.get("normalise"), "i").endswith(
        "return x / lax.psum(jnp.sum(x), 'i')\n"
    )


def test_all_gather_takes_to_as_one_of_its_two_words_and_jax_honours_it():
    import jax
    import numpy as np

    p = expr.program("x", "lax.all_gather(x, 'i', tiled=True, to='invarying')")
    assert p.axis_names == ("i",)
    mesh = jax.make_mesh((2,), ("i",), devices=jax.devices()[:2])
    f = jax.shard_map(p.build(), mesh=mesh, in_specs=jax.P("i"), out_specs=jax.P())
    x = jax.device_put(np.arange(4.0).reshape(2, 2), jax.NamedSharding(mesh, jax.P("i")))
    out = f(x)  # invarying: out_specs may say P(), all of it
    assert out.shape == (2, 2) and np.array_equal(out, np.arange(4.0).reshape(2, 2))
    with pytest.raises(expr.ExprError, match="not a choice of to=.*'varying' or 'invarying'"):
        expr.program("x", "lax.all_gather(x, 'i', to='everywhere')")
    with pytest.raises(expr.ExprError, match="string where JAX takes"):
        expr.program("x", "lax.all_gather(x, 'i', axis='invarying')")


def test_a_collective_may_name_a_tuple_of_axes_each_once():
    import jax
    import numpy as np

    p = expr.program("x", "lax.psum(x, ('a', 'b'))")
    assert p.axis_names == ("a", "b")
    f = jax.vmap(jax.vmap(p.build(), axis_name="b"), axis_name="a")
    assert float(f(np.ones((2, 3)))[0, 0]) == 6.0  # summed over both axes
    with pytest.raises(expr.ExprError, match="names an axis twice"):
        expr.program("x", "lax.psum(x, ('a', 'a'))")
    with pytest.raises(expr.ExprError, match="is not an axis name"):
        expr.program("x", "lax.psum(x, ('a', 1))")
    with pytest.raises(expr.ExprError, match="is not an axis name"):
        expr.program("x", "lax.psum(x, ('a', 'b', 'c', 'd', 'e'))")
