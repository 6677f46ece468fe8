"""Typed expressions as programs: the examples against real jax.pmap, a catalog-style program,
argument names, and the export as a plain Python function run in a subprocess."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from pmapviz.core.expressions import expr, functions
from pmapviz.core.expressions.expr import ExprProgram
from pmapviz.core.expressions.exprvocab import ExprError
from pmapviz.core.planning.planning import plan
from tests.conftest import TEST_DEVICES

# ------------------------------------------------------------------ the six examples, real pmap
N = TEST_DEVICES
EXAMPLES = [
    (
        "x, w, b",
        "jnp.tanh(x @ w + b)",
        [(N, 3, 4), (4, 5), (5,)],
        (0, None, None),
        0,
        lambda x, w, b: jnp.tanh(x @ w + b),
    ),
    (
        "x, y",
        "jax.vmap(jnp.dot)(x, y)",
        [(N, 10, 3), (N, 10, 3)],
        (0, 0),
        0,
        lambda x, y: jax.vmap(jnp.dot)(x, y),
    ),
    (
        "x",
        "x / lax.psum(jnp.sum(x), 'i')",
        [(N, 4)],
        (0,),
        0,
        lambda x: x / lax.psum(jnp.sum(x), "i"),
    ),
    (
        "x, w",
        "jnp.einsum('bij,jk->bik', x, w)",
        [(N, 2, 3, 4), (4, 5)],
        (0, None),
        0,
        lambda x, w: jnp.einsum("bij,jk->bik", x, w),
    ),
    ("x", "(x * 2, x.sum())", [(N, 4)], (0,), 0, lambda x: (x * 2, x.sum())),
    (
        "x",
        "lax.all_gather(x, 'i').mean(0)",
        [(N, 4)],
        (0,),
        None,
        lambda x: lax.all_gather(x, "i").mean(0),
    ),
]


@pytest.mark.parametrize(
    "args, body, shapes, in_axes, out_axes, direct", EXAMPLES, ids=[e[1] for e in EXAMPLES]
)
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
    assert isinstance(prog, functions.Program) and isinstance(prog, ExprProgram)
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


@pytest.mark.parametrize(
    "text, names",
    [
        ("x, w, b", ("x", "w", "b")),
        ("(x, y)", ("x", "y")),
        (" x ", ("x",)),
        ("x,", ("x",)),
        ("a1, b_2, c, d, e, g", ("a1", "b_2", "c", "d", "e", "g")),
    ],
)
def test_argument_names_parse(text, names):
    assert expr.parse_arg_names(text) == names


@pytest.mark.parametrize(
    "text",
    [
        "",
        " ",
        "x, x",
        "jnp",
        "x, lax",
        "jax",
        "np",
        "lambda",
        "def",
        "match",
        "print",
        "sum",
        "open",
        "_x",
        "__class__",
        "1x",
        "x-y",
        "x y",
        "a, b, c, d, e, g, h",
        "x,,y",
        "\u0445",
        "\uff58",
        "x\x00",
        "x" * 40,
        None,
    ],
)
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
    fixed = [
        "x / lax.psum(jnp.sum(x), 'i')",
        "lax.all_gather(x, 'i').mean(0) + y",
        "(x * 2, {'s': x.sum()})",
        "jax.vmap(jnp.dot)(x, y)",
    ]
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
    lines = [
        expr.IMPORTS,
        "import sys",
        "import numpy as np",
        "d = np.load(sys.argv[1])",
        "out = {}",
    ]
    for k, body in enumerate(bodies):
        lines += [
            expr.python_source(expr.program("x, y", body), "i"),
            "res = jax.vmap(f, axis_name='i')(d['x'], d['y'])",
            f"out.update({{'{k}_' + str(j): np.asarray(v) "
            "for j, v in enumerate(jax.tree.leaves(res))})",
        ]
    lines.append("np.savez(sys.argv[2], **out)")
    script = tmp_path / "exported.py"
    script.write_text("\n".join(lines) + "\n")
    r = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"JAX_PLATFORMS": "cpu"},
    )
    assert r.returncode == 0, r.stderr[-2000:]
    got = dict(np.load(tmp_path / "out.npz"))
    assert sorted(got) == sorted(want), json.dumps(bodies)
    for key, value in want.items():
        np.testing.assert_allclose(got[key], value, rtol=1e-5, atol=1e-6, err_msg=key)


def test_python_source_shape():
    prog = expr.program("x, w, b", "jnp.tanh(x@w+b)")
    assert expr.python_source(prog, "i") == "def f(x, w, b):\n    return jnp.tanh(x @ w + b)\n"
    assert expr.python_source(functions.get("normalise"), "i").endswith(
        "return x / lax.psum(jnp.sum(x), 'i')\n"
    )
