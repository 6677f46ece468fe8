"""The planner against real jax.pmap: property tests over random functions, ranks, shapes, axes
and device counts, the classic cases, every problem code, and the text parsers."""

from __future__ import annotations

import math
import time
from dataclasses import replace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from jax import lax

from pmapviz.core.base.pytrees import is_shape
from pmapviz.core.base.valueparse import SettingError as InputError
from pmapviz.core.base.valueparse import parse_axis, parse_shape
from pmapviz.core.base.valuetext import fmt_shape
from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning import planfacts, planinputrules, planning, planoutputrules
from pmapviz.core.planning.planning import plan
from tests.conftest import TEST_DEVICES

# ------------------------------------------------------------------ functions to plan
GENERIC = {
    "double": (1, lambda x: x * 2),
    "add": (2, lambda x, y: x + y),  # numpy broadcasting: many shape pairs work
    "sum": (1, lambda x: jnp.sum(x)),
    "transpose": (1, lambda x: x.T),
    "first": (1, lambda x: x[0]),  # fails on scalars
    "matmul": (2, lambda x, y: x @ y),
    "psum": (1, lambda x: lax.psum(x, "i")),
    "psum_total": (1, lambda x: lax.psum(jnp.sum(x), "i")),
    "pair": (2, lambda x, y: (x * 2, jnp.sum(y))),  # a pytree output
    "dict": (2, lambda x, y: {"sum": x + y, "total": lax.psum(jnp.sum(x), "i")}),
}
# what the property test draws (float64 needs jax_enable_x64, which the app never turns on)
DRAWN_DTYPES = ("float32", "int32", "bfloat16", "float16", "int8", "bool")


def make_args(shapes, dtypes=None):
    dtypes = dtypes or ["float32"] * len(shapes)
    return [
        (np.arange(math.prod(s)).reshape(s) % 5 + 1).astype(jnp.dtype(t))
        for s, t in zip(shapes, dtypes, strict=True)
    ]


def real_pmap(fn, shapes, in_axes, out_axes, axis_name, n, seen=None, dtypes=None):
    """Real jax.pmap on the user's RAW settings. ``seen`` (a list) receives the shapes f is
    traced with: the per-device shapes as JAX itself hands them to f."""
    args = make_args(shapes, dtypes)

    def recorded(*xs):
        if seen is not None:
            seen.append(tuple(tuple(x.shape) for x in xs))
        return fn(*xs)

    f = jax.pmap(
        recorded, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, devices=jax.devices()[:n]
    )
    return f(*args)


@st.composite
def shape_st(draw):
    rank = 0 if draw(st.integers(0, 9)) == 9 else draw(st.integers(1, 3))  # few scalars
    return tuple(draw(st.integers(0, 9)) for _ in range(rank))


@st.composite
def cases(draw):
    """Mostly plausible settings (so that many examples really run), plus every kind of
    mistake: out-of-range and negative axes, None everywhere, mismatched and oversized axes,
    negative out_axes; several dtypes; functions returning a tuple or a dict."""
    name = draw(st.sampled_from(sorted(GENERIC)))
    n_args, fn = GENERIC[name]
    n = draw(st.integers(1, TEST_DEVICES))
    shapes = [list(draw(shape_st())) for _ in range(n_args)]
    dtypes = [draw(st.sampled_from(DRAWN_DTYPES)) for _ in range(n_args)]
    if draw(st.integers(0, 2)):  # usually one dtype for all: more examples get to run
        dtypes = [dtypes[0]] * n_args
    in_axes = []
    for s in shapes:
        kind = draw(st.sampled_from(range(10)))
        if kind <= 6 and s:
            in_axes.append(draw(st.integers(-len(s), len(s) - 1)))
        elif kind <= 7:
            in_axes.append(None)
        else:
            in_axes.append(draw(st.integers(-4, 4)))
    if draw(st.integers(0, 3)):  # usually: one shared mapped size pmap can take
        m = draw(st.integers(1, n))
        for s, a in zip(shapes, in_axes, strict=True):
            if a is not None and -len(s) <= a < len(s):
                s[a] = m
    out_axes = draw(st.one_of(st.just(0), st.none(), st.integers(-3, 3)))
    uses_i = name.startswith("psum") or name == "dict"
    axis_name = "i" if uses_i or draw(st.booleans()) else None
    return name, fn, tuple(map(tuple, shapes)), tuple(in_axes), out_axes, axis_name, n, dtypes


def vmap_says_varies(fn, shapes, in_axes, axis_name, dtypes) -> bool:
    """JAX's own answer (jax.vmap on the raw in_axes), not the planner's: does any output
    leaf differ from device to device? vmap refuses out_axes=None exactly then."""
    try:
        jax.eval_shape(
            jax.vmap(fn, in_axes=in_axes, out_axes=None, axis_name=axis_name),
            *make_args(shapes, dtypes),
        )
    except ValueError as err:
        assert "out_axes" in str(err), err
        return True
    return False


def shard_shapes(out, out_axes):
    """Per-device output shapes read from the real result's shards (the device axis, of size
    1 in each shard, removed; with out_axes=None each device holds the whole value)."""

    def one(leaf):
        shapes = {tuple(s.data.shape) for s in leaf.addressable_shards}
        assert len(shapes) == 1, shapes
        (shape,) = shapes
        if out_axes is None:
            return shape
        assert shape[out_axes] == 1, shape
        return shape[:out_axes] + shape[out_axes + 1 :]

    return jax.tree.map(one, out)


# JAX 0.10's pmap runs some empty arrays whose mapped sizes differ: x f32[2] on axis 0 beside
# y f32[0,1] on axis -1 gives (2, 0) on 2 devices, while y f32[3,1] on axis -1 is refused. The
# plan refuses both, as it refuses every empty block.
EMPTY_REFUSALS = ("empty_block", "mapped_sizes_differ")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_plan_agrees_with_real_pmap(case):
    name, fn, shapes, in_axes, out_axes, axis_name, n, dtypes = case
    p = plan(
        fn,
        shapes,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_name=axis_name,
        n_devices=n,
        dtypes=dtypes,
    )
    where = f"{name} {shapes} {dtypes} {in_axes}/{out_axes}"
    seen = []
    try:  # the oracle gets the user's raw in_axes, never the planner's normalised ones
        out = real_pmap(fn, shapes, in_axes, out_axes, axis_name, n, seen, dtypes)
    except Exception as err:  # JAX refuses: the plan must have said so
        assert not p.ok, f"{where}: JAX raised {err!r}"
        assert p.problems
        event(f"JAX refused; plan: {p.problems[0].code}")
        return
    real = jax.tree.map(lambda a: tuple(a.shape), out)
    if any(0 in s for s in shapes) and p.problems and p.problems[0].code in EMPTY_REFUSALS:
        return  # refused on purpose: JAX is inconsistent on empty blocks (see planning)
    if out_axes is None and vmap_says_varies(fn, shapes, in_axes, axis_name, dtypes):
        # JAX ran but silently returned device 0's value: the plan must refuse it
        assert not p.ok and p.problems[0].code == "out_axes_none_varies", where
        event("out_axes=None on a varying output, refused")
        return
    if out_axes is not None and out_axes < 0:
        # what out_axes means (jax.vmap's reading of it) against what pmap really returned
        meant = jax.eval_shape(
            jax.vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name),
            *make_args(shapes, dtypes),
        )
        if jax.tree.map(lambda a: tuple(a.shape), meant) != real:  # pmap got it wrong
            assert not p.ok, f"{where}: pmap misshaped it to {real}, the plan said ok"
        if not p.ok:  # refusing negative out_axes outright is allowed (the fix is the same)
            assert p.problems[0].code == "negative_out_axes", (where, p.problems)
            event("negative out_axes, refused")
            return
    assert p.ok, f"{where}: JAX ran, plan said {p.problems}"
    assert p.out_shapes == real
    assert p.out_dtypes == jax.tree.map(lambda a: str(a.dtype), out)
    assert p.devices_used == len(out_devices(out))
    assert seen and blocks(p) == seen[0]  # what JAX really hands f
    assert p.per_device_out_shapes == shard_shapes(out, out_axes)  # what each device holds
    event(f"ran: {name}, {'mixed' if len(set(dtypes)) > 1 else dtypes[0]}, out_axes={out_axes}")


def blocks(p):
    """What each device gets: the plan's per-device shape of every leaf."""
    return tuple(leaf.local_shape for leaf in p.leaves)


def out_devices(out):
    leaf = jax.tree.leaves(out)[0]
    return {s.device for s in leaf.addressable_shards}


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(functions.PROGRAMS), st.integers(1, TEST_DEVICES), st.integers(1, 4))
def test_catalog_programs_plan_like_pmap(program, n, block):
    """Every catalog entry at its own default layout, resized to n devices."""
    shapes = [
        (s[:a] + (n,) + s[a + 1 :]) if a is not None else s
        for s, a in zip(program.default_shapes, program.default_in_axes, strict=True)
    ]
    shapes = [tuple(min(d, block * 3) if k else d for k, d in enumerate(s)) for s in shapes]
    if program.key == "matmul":
        shapes = [(n, 4, block), (block, 2)]
    p = plan(
        program,
        shapes,
        in_axes=program.default_in_axes,
        out_axes=program.default_out_axes,
        axis_name="i",
        n_devices=n,
    )
    assert p.ok, p.problems
    out = real_pmap(program.build("i"), shapes, p.leaf_axes, program.default_out_axes, "i", n)
    assert p.out_shapes == tuple(out.shape)


# ------------------------------------------------------------------ classic cases
def test_classic_in_axes_combinations():
    add = functions.get("add")
    assert plan(add, [(8, 3), (8, 3)], in_axes=(0, 0), n_devices=8).out_shapes == (8, 3)
    assert plan(add, [(3, 8), (8, 3)], in_axes=(1, 0), n_devices=8).out_shapes == (8, 3)
    assert plan(add, [(3, 8), (3, 8)], in_axes=(1, 1), n_devices=8).out_shapes == (8, 3)
    p = plan(add, [(8, 3), (3,)], in_axes=(0, None), n_devices=8)
    assert p.ok and blocks(p) == ((3,), (3,)) and p.out_shapes == (8, 3)
    p = plan(functions.get("double"), [(8, 3)], out_axes=1, n_devices=8)
    assert p.out_shapes == (3, 8) and p.per_device_out_shapes == (3,)
    p = plan(add, [(8, 3), (4, 3)], n_devices=8)
    assert [q.code for q in p.problems] == ["mapped_sizes_differ"]
    assert "x axis 0 has 8, y axis 0 has 4" in p.problems[0].message


def test_seed_dot_product_shapes_and_fix():
    dot = functions.get("batched_dot")
    p = plan(dot, [(10_000_000, 3)] * 2, n_devices=8)
    assert not p.ok
    q = p.problems[0]
    assert q.code == "mapped_axis_too_large"
    assert "10,000,000 elements but there are 8 devices" in q.message
    assert "reshape x (10_000_000, 3) to (8, 1_250_000, 3)" in q.fix.lower()
    assert q.new_shapes == {0: (8, 1_250_000, 3), 1: (8, 1_250_000, 3)}
    fixed = plan(dot, list(q.new_shapes.values()), n_devices=8)
    assert fixed.ok and fixed.out_shapes == (8, 1_250_000)
    assert blocks(fixed) == ((1_250_000, 3),) * 2
    assert fixed.per_device_out_shapes == (1_250_000,)


def test_plan_is_fast_and_allocates_nothing_for_huge_shapes():
    dot = functions.get("batched_dot")
    shapes = [(8, 10**9, 3)] * 2  # 96 GB if it were allocated
    t = time.perf_counter()
    p = plan(dot, shapes, n_devices=8)
    first = time.perf_counter() - t
    assert p.ok and p.out_shapes == (8, 10**9)
    assert first < 5  # generous: a trace, not a computation (benchmarks/ measures it)


def test_devices_used_when_axis_smaller_than_device_count():
    p = plan(functions.get("double"), [(3, 5)], n_devices=8)
    assert p.ok and p.devices_used == 3
    assert "first 3 of the 8 devices" in p.notes[0]


def test_planning_for_a_bigger_machine():
    p = plan(functions.get("double"), [(256, 4)], n_devices=256)
    assert p.ok and p.devices_used == 256 and p.out_shapes == (256, 4)


def test_default_device_count_is_local():
    assert plan(functions.get("double"), [(8, 2)]).n_devices == jax.local_device_count()


@pytest.mark.parametrize(
    "kwargs, code, words",
    [
        (dict(fn="double", shapes=[(8, 3)], in_axes=2), "axis_out_of_range", "axes are 0 to 1"),
        (dict(fn="double", shapes=[()], in_axes=0), "axis_out_of_range", "is a scalar"),
        (dict(fn="double", shapes=[(8, 3)], in_axes=None), "no_mapped_axis", "in_axes=None"),
        (dict(fn="double", shapes=[(0, 3)]), "mapped_axis_empty", "size 0"),
        (dict(fn="add", shapes=[(2, 0), (2, 0)]), "empty_block", "(0,)"),
        (
            dict(fn="double", shapes=[(8, 3)], out_axes=None),
            "out_axes_none_varies",
            "silently returns device 0",
        ),
        (dict(fn="double", shapes=[(8, 3)], out_axes=-1), "negative_out_axes", "out_axes=1"),
        (dict(fn="local_sum", shapes=[(8, 3)], out_axes=1), "out_axes_out_of_range", "0 to 0"),
        (dict(fn="normalise", shapes=[(8, 3)]), "needs_axis_name", "axis_name"),
        (dict(fn="add", shapes=[(8, 3), (8, 3)], in_axes=(0,)), "in_axes_length", "1 entry"),
        (
            dict(fn="matmul", shapes=[(8, 4, 5), (6, 2)], in_axes=(0, None)),
            "function_rejects_shapes",
            "x (4, 5), w (6, 2)",
        ),
        (dict(fn="double", shapes=[(9, 3)]), "mapped_axis_too_large", "(3, 3, 3)"),
        (dict(fn="double", shapes=[(8, 3)], dtypes=["complex64"]), "dtype", "complex64"),
    ],
)
def test_every_problem_has_a_message_and_a_fix(kwargs, code, words):
    kw = dict(kwargs)
    p = plan(functions.get(kw.pop("fn")), kw.pop("shapes"), n_devices=8, **kw)
    assert not p.ok
    assert p.problems[0].code == code
    text = p.problems[0].message + " " + p.problems[0].fix
    assert words in text, text
    assert p.problems[0].fix


def test_out_axes_none_is_fine_when_every_device_agrees():
    p = plan(functions.get("global_sum"), [(8, 3)], out_axes=None, axis_name="i", n_devices=8)
    assert p.ok and p.out_varies is False and p.out_shapes == ()
    out = real_pmap(functions.get("global_sum").build("i"), [(8, 3)], (0,), None, "i", 8)
    assert out.shape == ()


def test_jax_really_is_silent_about_out_axes_none():
    """The reason for out_axes_none_varies: pmap returns device 0's value, no error."""
    out = real_pmap(lambda x: x * 2, [(8, 3)], (0,), None, None, 8)
    np.testing.assert_array_equal(np.asarray(out), (np.arange(3) + 1) * 2)


def test_jax_really_misshapes_negative_out_axes():
    out = real_pmap(lambda x: x * 2, [(8, 3)], (0,), -1, None, 8)
    assert out.shape != (3, 8)  # what out_axes=-1 would mean; JAX 0.10 gives (24, 1)


def test_pytree_outputs():
    p = plan(GENERIC["pair"][1], [(4, 3), (4, 5)], n_devices=8)
    assert p.ok and p.out_shapes == ((4, 3), (4,)) and p.per_device_out_shapes == ((3,), ())
    assert tuple(leaf.name for leaf in p.leaves) == ("x", "y")


# ------------------------------------------------------------------ parsing user text
@pytest.mark.parametrize(
    "text, shape",
    [
        ("8, 1250000, 3", (8, 1250000, 3)),
        ("(8,1_250_000,3)", (8, 1250000, 3)),
        ("[8 1250000 3]", (8, 1250000, 3)),
        ("  8 ,  3 ", (8, 3)),
        ("8,", (8,)),
        ("()", ()),
        ("8x3", (8, 3)),
        ("8 x 1_250_000 × 3", (8, 1250000, 3)),
        ("0, 3", (0, 3)),
    ],
)
def test_parse_shape_is_tolerant(text, shape):
    assert parse_shape(text) == shape


@pytest.mark.parametrize(
    "text, words",
    [
        ("", "empty"),
        ("8,,3", "empty size"),
        ("8, -3", "`-3`"),
        ("1e309", "`1e309`"),
        ("nan", "`nan`"),
        ("8, 3.5", "`3.5`"),
        ("4, x, 3", "`x` in `4, x, 3` is not a size"),  # not (4, 3): an x joins two sizes
        ("x8", "`x8`"),
        ("8x", "`8x`"),
        ("8, ²", "not a size"),
        ("8, ١", "not a size"),
        ("ünïcode", "not a size"),
        (", ".join(["2"] * 40), "40 axes"),
        ("99999999999, 99999999999, 99999999999", "at most 1,099,511,627,776"),
        ("9" * 400, "digits"),
        ("9" * 600, "characters long"),
    ],
)
def test_parse_shape_explains_bad_text(text, words):
    with pytest.raises(InputError) as err:
        parse_shape(text, "x")
    assert words in str(err.value)


def test_parse_axis():
    assert parse_axis("0") == 0 and parse_axis(" -1 ") == -1 and parse_axis("+2") == 2
    assert parse_axis("None") is None and parse_axis("none") is None and parse_axis("") is None
    for bad in ("0.5", "x", "1e3", "99999"):
        with pytest.raises(InputError):
            parse_axis(bad)


def test_fmt_shape_writes_python():
    assert fmt_shape((10_000_000, 3)) == "(10_000_000, 3)"
    assert fmt_shape((8,)) == "(8,)" and fmt_shape(()) == "()"


@pytest.mark.parametrize(
    "shape, axis, works",
    [
        ((3, 8), -1, False),
        ((8, 8), -1, False),
        ((2, 8, 3), -2, False),
        ((8, 3), -2, True),
        ((8,), -1, True),
        ((3, 1), -1, True),
        ((1, 2, 2), -1, False),
    ],
)
def test_negative_in_axes_match_real_pmap_as_typed(shape, axis, works):
    """JAX 0.10 splits axis 0 and squeezes the named axis: only a negative axis that means
    axis 0 (or a mapped size of 1) works. The verdict is checked against real pmap here."""
    p = plan(lambda x: x * 2, [shape], in_axes=axis)
    try:
        real_pmap(lambda x: x * 2, [shape], axis, 0, None, TEST_DEVICES)
        jax_ok = True
    except Exception:  # noqa: BLE001
        jax_ok = False
    assert jax_ok == works == p.ok
    if not works:
        q = p.problems[0]
        assert q.code == "negative_in_axes" and q.new_axes == {0: axis % len(shape)}
        assert f"in_axes={axis % len(shape)}" in q.fix
    assert p.in_axes_given == (axis,)


# ------------------------------------------------------------------ your own f, pytree arguments
LEAF_KEYS = ("a", "b", "w")


@st.composite
def tree_arg(draw, n):
    """An argument: one array, a dict or a tuple of arrays; returns (shape tree, leaf paths)."""
    kind = draw(st.sampled_from(["array", "dict", "tuple"]))
    if kind == "array":
        return draw(shape_st()), [""]
    count = draw(st.integers(1, 3))
    shapes = [draw(shape_st()) for _ in range(count)]
    if kind == "dict":
        keys = draw(st.permutations(LEAF_KEYS))[:count]
        return dict(zip(keys, shapes, strict=True)), [f"[{k!r}]" for k in sorted(keys)]
    return tuple(shapes), [f"[{i}]" for i in range(count)]


@st.composite
def prefix_for(draw, tree, n):
    """An in_axes entry for ``tree``: one axis for all of it, or its structure (sometimes a
    wrong one: a missing key, a tuple for a dict), with random axes (negative included)."""

    def axis():
        return draw(st.one_of(st.none(), st.integers(-3, 3), st.just(0), st.just(0)))

    if isinstance(tree, dict) and draw(st.integers(0, 2)):
        if draw(st.integers(0, 5)) == 0:  # not its structure
            return draw(
                st.sampled_from(
                    [{k: 0 for k in list(tree)[:-1]} or {"zz": 0}, tuple(0 for _ in tree)]
                )
            )
        return {k: axis() for k in tree}
    if isinstance(tree, tuple) and not is_shape(tree) and draw(st.integers(0, 2)):
        return tuple(axis() for _ in tree)
    return axis()


def _leaf_paths(name, paths):
    return [name + p for p in paths]


@st.composite
def expr_body(draw, leaves):
    """A random composition from the allow-list over the leaves (``x``, ``p['w']``, ...):
    elementwise maths, reductions, matmul, indexing, transposes, collectives, and tuple or
    dict results."""

    def term(depth=0):
        if depth > 1 or draw(st.integers(0, 2)) == 0:
            return draw(st.sampled_from(leaves))
        a, b = term(depth + 1), term(depth + 1)
        return draw(
            st.sampled_from(
                [
                    f"jnp.tanh({a})",
                    f"({a} + {b})",
                    f"({a} * 2)",
                    f"jnp.sum({a})",
                    f"({a} @ {b})",
                    f"{a}.T",
                    f"jnp.mean({a}, axis=0)",
                    f"{a}[0]",
                    f"lax.psum({a}, 'i')",
                    f"lax.all_gather({a}, 'i').mean(0)",
                    f"jnp.maximum({a}, {b})",
                    f"{a}.reshape(-1)",
                ]
            )
        )

    shape = draw(st.sampled_from(["one", "one", "tuple", "dict"]))
    if shape == "tuple":
        return f"({term()}, {term()})"
    if shape == "dict":
        return f"{{'s': {term()}, 't': {term()}}}"
    return term()


@st.composite
def out_prefix(draw, body):
    axis = st.one_of(st.just(0), st.none(), st.integers(-2, 2))
    if body.startswith("(") and draw(st.booleans()):
        return (draw(axis), draw(axis))
    if body.startswith("{'s'") and draw(st.booleans()):
        return {"s": draw(axis), "t": draw(axis)}
    return draw(axis)


@st.composite
def tree_cases(draw):
    n = draw(st.integers(1, TEST_DEVICES))
    (x_shape, _), (p_tree, p_paths) = draw(tree_arg(n)), draw(tree_arg(n))
    x_shape = draw(shape_st())
    axes = (draw(prefix_for(x_shape, n)), draw(prefix_for(p_tree, n)))
    if draw(st.integers(0, 3)):  # usually one mapped size pmap can take
        m = draw(st.integers(1, n))
        x_shape, p_tree = _resize(x_shape, axes[0], m), _resize(p_tree, axes[1], m)
    body = draw(expr_body(["x", *_leaf_paths("p", p_paths)]))
    return n, x_shape, p_tree, axes, body, draw(out_prefix(body))


def _resize(tree, prefix, m):
    """Set each leaf's mapped axis (per ``prefix``) to size m, where the axis exists."""
    if is_shape(tree):
        if prefix is None or not isinstance(prefix, int) or not -len(tree) <= prefix < len(tree):
            return tree
        s = list(tree)
        s[prefix] = m
        return tuple(s)
    keys = sorted(tree) if isinstance(tree, dict) else range(len(tree))
    subs = {k: prefix if isinstance(prefix, (int, type(None))) else _sub(prefix, k) for k in keys}
    if subs and any(v is _MISSING for v in subs.values()):
        return tree
    new = {k: _resize(tree[k], subs[k], m) for k in keys}
    return new if isinstance(tree, dict) else tuple(new[k] for k in keys)


_MISSING = object()


def _sub(prefix, k):
    try:
        return prefix[k]
    except (KeyError, IndexError, TypeError):
        return _MISSING


def _tree_values(tree):
    if is_shape(tree):
        return make_args([tree])[0]
    if isinstance(tree, dict):
        return {k: _tree_values(v) for k, v in tree.items()}
    return tuple(_tree_values(v) for v in tree)


def _has_negative(prefix) -> bool:
    return any(isinstance(a, int) and a < 0 for a in jax.tree.leaves(prefix))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree_cases())
def test_expressions_with_pytree_arguments_plan_like_real_pmap(case):
    """Random expressions from the allow-list over random pytree arguments with random
    in_axes / out_axes prefixes: the oracle is real jax.pmap on the user's RAW trees."""
    n, x_shape, p_tree, in_axes, body, out_axes = case
    prog = expr.program("x, p", body)
    p = plan(
        prog, [x_shape, p_tree], in_axes=in_axes, out_axes=out_axes, axis_name="i", n_devices=n
    )
    where = f"f(x, p) = {body}; x {x_shape}, p {p_tree}, in_axes={in_axes}, out_axes={out_axes}"
    fn, args = prog.build("i"), (_tree_values(x_shape), _tree_values(p_tree))
    try:
        out = jax.pmap(
            fn, in_axes=in_axes, out_axes=out_axes, axis_name="i", devices=jax.devices()[:n]
        )(*args)
    except Exception as err:  # JAX refuses: the plan must have said so
        assert not p.ok and p.problems, f"{where}: JAX raised {err!r}"
        event(f"JAX refused; plan: {p.problems[0].code}")
        return
    real = jax.tree.map(lambda a: tuple(a.shape), out)
    if p.problems and p.problems[0].code == "empty_block":
        return  # refused on purpose (see planning)
    try:
        meant = jax.eval_shape(
            jax.vmap(fn, in_axes=in_axes, out_axes=out_axes, axis_name="i"), *args
        )
    except ValueError as err:  # vmap refuses out_axes=None on a leaf that varies
        assert "out_axes" in str(err), err
        assert not p.ok and p.problems[0].code == "out_axes_none_varies", (where, p.problems)
        event("out_axes=None on a varying leaf, refused")
        return
    if _has_negative(out_axes) and not p.ok:
        assert p.problems[0].code == "negative_out_axes", (where, p.problems)
        return
    assert p.ok, f"{where}: JAX ran, plan said {p.problems}"
    assert p.out_shapes == real == jax.tree.map(lambda a: tuple(a.shape), meant), where
    event(f"ran: {type(p_tree).__name__} p, out_axes {type(out_axes).__name__}")


@pytest.mark.parametrize(
    "shapes, in_axes, out_axes, dtypes",
    [
        ([(8, 3), {"w": (3, 2), "b": (2,)}], (0, {"w": None, "b": None}), 0, ["float32", "int32"]),
        ([(3, 8)], (1,), None, ["bfloat16"]),
        ([(8, 3), ((8,), (3,))], (0, (0, None)), (0, 0), ["float32", "float32"]),
    ],
)
def test_a_plans_key_rebuilds_the_same_plan(shapes, in_axes, out_axes, dtypes):
    from pmapviz.core.expressions import expr

    body = {1: "x * 2", 2: "(x + p[0][:, None].sum(), x * p[1])"}[len(shapes)]
    if isinstance(shapes[-1], dict):
        body = "(x @ p['w'] + p['b'], x)"
    prog = expr.program("x, p" if len(shapes) == 2 else "x", body)
    p = plan(prog, shapes, in_axes=in_axes, out_axes=out_axes, n_devices=8, dtypes=dtypes)
    hash(p.key)
    assert planning.replan(prog, p.key) == p
    other = plan(prog, shapes, in_axes=in_axes, out_axes=out_axes, n_devices=4, dtypes=dtypes)
    assert other.key != p.key


def test_in_axes_are_kept_as_typed_even_when_their_count_is_wrong():
    from pmapviz.features.explorer import codegen

    p = plan(functions.get("double"), [(8, 3)], in_axes=(0, -1), n_devices=8)
    assert not p.ok and p.problems[0].code == "in_axes_length"
    assert p.in_axes_given == (0, -1)
    assert "in_axes=(0, -1)" in codegen.pmap_call(p, compact=True)  # what the user wrote


# ---------------------------------------------------------------- each rule's exact words
def _p(body_or_key, shapes, **kw):
    prog = (
        functions.get(body_or_key)
        if "(" not in body_or_key and " " not in body_or_key
        else (expr.program("x, p" if len(shapes) == 2 else "x", body_or_key))
    )
    return plan(prog, shapes, n_devices=8, **kw)


RULE_CASES = [
    (
        ("normalise", [(8, 3)]),
        {},
        (
            "needs_axis_name",
            "x / lax.psum(jnp.sum(x), 'axis_name') uses a collective (lax.psum), "
            "which needs to know which mapped axis to reduce over, but axis_name is empty.",
            "Set axis_name, e.g. 'i' (pmap(f, axis_name='i')); the collective then names the same "
            "axis.",
            None,
        ),
    ),
    (
        ("double", [(8, 3)]),
        {"dtypes": ["complex64"]},
        (
            "dtype",
            "x: dtype `complex64` is not supported here.",
            "Choose one of float32, int32, bfloat16, float16, float64, int8, bool.",
            0,
        ),
    ),
    (
        ("double", [(8, 3)]),
        {"in_axes": (0, 0)},
        (
            "in_axes_length",
            "in_axes has 2 entries but f takes 1 argument (x).",
            "Give one entry per argument, e.g. in_axes=(0,).",
            None,
        ),
    ),
    (
        ("add", [(8, 3), (8, 3)]),
        {"in_axes": (0,)},
        (
            "in_axes_length",
            "in_axes has 1 entry but f takes 2 arguments (x, y).",
            "Give one entry per argument, e.g. in_axes=(0, 0).",
            None,
        ),
    ),
    (
        ("double", [(3, 8)]),
        {"in_axes": -1},
        (
            "negative_in_axes",
            "in_axes=-1 for x (3, 8) means axis 1, but pmap in JAX 0.10 does not "
            "normalise negative in_axes: it shards the wrong axis and fails with a misleading "
            "IndivisibleError or 'cannot select an axis to squeeze out' (only a negative axis that "
            "means axis 0 works).",
            "Write the axis as a non-negative number: in_axes=1 for x.",
            0,
        ),
    ),
    (
        ("double", [(8, 3)]),
        {"out_axes": -1},
        (
            "negative_out_axes",
            "out_axes=-1 is negative; pmap in JAX 0.10 does not support it and "
            "returns a wrongly shaped result instead of raising.",
            "Use the non-negative axis, e.g. out_axes=1.",
            None,
        ),
    ),
    (
        ("double", [(8, 2**38)]),
        {},
        (
            "too_large",
            "x (8, 274_877_906_944) has 2,199,023,255,552 elements; pmapviz plans arrays "
            "of at most 1,099,511,627,776 (2**40) elements.",
            "Use smaller sizes.",
            0,
        ),
    ),
    (
        ("x * p['w'].sum()", [(8, 3), {"w": (2**41,), "b": (2,)}]),
        {"in_axes": (0, None)},
        (
            "too_large",
            "p['w'] (2_199_023_255_552,) has 2,199,023,255,552 elements; pmapviz plans "
            "arrays of at most 1,099,511,627,776 (2**40) elements.",
            "Use smaller sizes.",
            1,
        ),
    ),
    (
        ("add", [(8, 3), (4, 3)]),
        {},
        (
            "mapped_sizes_differ",
            "The mapped axes differ in size: x axis 0 has 8, y axis 0 has 4. "
            "pmap gives each device one slice of every mapped axis, so they must all have the same "
            "size.",
            "Make them all 8 (like x; at most 8, the device count): y (4, 3) -> (8, 3); or set "
            "in_axes to None for an argument every device should get whole.",
            None,
        ),
    ),
    (
        ("x * p['w']", [(8, 3), {"w": (3,)}]),
        {"in_axes": (0, (0, 1))},
        (
            "in_axes_structure",
            "in_axes for p is a tuple of 2, but p is a dict with keys `'w'`: an "
            "in_axes entry must be one axis (or None) for the whole of it, or have exactly its "
            "structure.",
            "Give the argument one in_axes (e.g. 0 or None) or a dict / tuple with "
            "exactly its keys.",
            1,
        ),
    ),
    (
        ("x * 2", [(8, 3)]),
        {"out_axes": {"s": 0}},
        (
            "out_axes_structure",
            "out_axes for f's output is a dict with keys `'s'`, but f's output is one array.",
            "Give out_axes one axis (e.g. 0) or a dict / tuple with exactly the "
            "structure of f's output.",
            None,
        ),
    ),
    (
        ("double", [(8, 3)]),
        {"out_axes": None},
        (
            "out_axes_none_varies",
            "out_axes=None says every device returns the same value, but f's "
            "output differs from device to device. JAX 0.10 does not raise here: it silently "
            "returns device 0's value (jit(vmap(f)) would raise).",
            "Use out_axes=0 to stack every device's "
            "result, or make the output equal on every device with a collective such as "
            "lax.psum or lax.all_gather.",
            None,
        ),
    ),
    (
        ("x[:, None] * x[None, :]", [(8, 2**20)]),
        {},
        (
            "output_too_large",
            "f's result would have 8,796,093,022,208 elements (each device "
            "returns (1_048_576, 1_048_576), on 8 devices); pmapviz refuses outputs above "
            "1,099,511,627,776 (2**40) elements, far below what XLA can index.",
            "Use smaller sizes: "
            "check which axes f combines (e.g. x @ w multiplies the rows of x by the columns "
            "of w).",
            None,
        ),
    ),
]


@pytest.mark.parametrize("args, kw, want", RULE_CASES, ids=[c[2][0] for c in RULE_CASES])
def test_each_rule_says_exactly_what_is_wrong_and_the_fix(args, kw, want):
    """The problem a person reads: its code, message (in their shapes), fix, and the argument
    it is about (an argument index, also for a leaf of a pytree argument)."""
    p = _p(*args, **kw)
    assert not p.ok
    q = p.problems[0]
    assert (q.code, q.message, q.fix, q.arg) == want


def test_rejected_shapes_quote_jaxs_first_line_and_oversized_axes_name_their_argument():
    p = plan(expr.program("x", "jnp.sum(x, axis=5)"), [(8, 3)], n_devices=8)
    assert p.problems[0].message == (
        "Each device would call f with x (3,), and f cannot take that: axis 5 is out of bounds "
        "for array of dimension 1"
    )
    p = plan(functions.get("double"), [(16, 3)], n_devices=8)
    assert (p.problems[0].code, p.problems[0].arg) == ("mapped_axis_too_large", 0)


def test_a_prefix_out_axes_is_kept_per_output_leaf_and_replan_keeps_the_device_count():
    prog = expr.program("x", "(x * 2, lax.psum(x, 'i'))")
    p = plan(prog, [(4, 3)], out_axes=(0, None), axis_name="i", n_devices=4)
    assert p.ok and p.out_leaf_axes == (0, None)
    assert p.out_shapes == ((4, 3), (3,))
    assert planning.replan(prog, p.key) == p and planning.replan(prog, p.key).n_devices == 4


@pytest.mark.parametrize("args, kw, want", RULE_CASES, ids=[c[2][0] for c in RULE_CASES])
def test_plan_is_normalise_then_the_rules_and_no_rule_changes_what_it_reads(args, kw, want):
    """plan() reports the first input rule that objects to the normalised settings (or, once
    f is traced, the output rules); every rule only reads: the settings are the same after
    every rule has looked at them."""
    body, shapes = args
    prog = (
        functions.get(body)
        if "(" not in body and " " not in body
        else expr.program("x, p" if len(shapes) == 2 else "x", body)
    )
    n = planfacts.normalise(prog, shapes, n_devices=8, **kw)
    before = repr(n)
    found = [q for rule in planinputrules.INPUT_RULES for q in planfacts.as_list(rule(n))]
    assert repr(n) == before
    traced = planoutputrules.infer_output(n) if not found else None
    if isinstance(traced, planfacts.Output):
        n = replace(n, output=traced)
        before = repr(n)
        rules = (planoutputrules.rule_out_axes_structure, *planoutputrules.OUTPUT_RULES)
        found = [q for rule in rules for q in planfacts.as_list(rule(n))]
        assert repr(n) == before
    p = plan(prog, shapes, n_devices=8, **kw)
    assert found[0].code == p.problems[0].code == want[0]
    assert (found[0].message, found[0].fix) == (p.problems[0].message, p.problems[0].fix)


def test_a_plan_holds_its_arguments_and_leaves():
    prog = expr.program("x, p", "x @ p['w'] + p['b']")
    p = plan(
        prog,
        [(8, 3), {"w": (3, 2), "b": (2,)}],
        in_axes=(0, {"w": None, "b": None}),
        n_devices=8,
        dtypes=["float32", "int32"],
    )
    assert p.ok and p.has_trees and p.in_axes_given == (0, {"w": None, "b": None})
    assert p.arguments == (
        planfacts.Argument(0, "x", (8, 3), "float32", 0),
        planfacts.Argument(1, "p", {"w": (3, 2), "b": (2,)}, "int32", {"w": None, "b": None}),
    )
    assert [
        (leaf.argument, leaf.name, leaf.shape, leaf.dtype, leaf.axis, leaf.local_shape)
        for leaf in p.leaves
    ] == [
        (0, "x", (8, 3), "float32", 0, (3,)),
        (1, "p['b']", (2,), "int32", None, (2,)),
        (1, "p['w']", (3, 2), "int32", None, (3, 2)),
    ]
    assert p.leaf_axes == (0, None, None) and p.devices_used == 8
    assert p.leaf_rows() == [("x", (8, 3), 0), ("p['b']", (2,), None), ("p['w']", (3, 2), None)]


@pytest.mark.parametrize(
    "shapes, kw, code, axes, blocks_known",
    [
        ([(8, 3)], {"dtypes": ["complex64"]}, "dtype", [None], False),  # stopped before the axes
        ([(16, 3)], {}, "mapped_axis_too_large", [0], False),  # axes checked; no layout
        ([(3, 8)], {"in_axes": -1}, "negative_in_axes", [1], True),  # the layout was fine
        ([(8, 3)], {"out_axes": 2}, "out_axes_out_of_range", [0], True),
    ],
)
def test_a_plan_that_stops_reports_what_the_checks_before_it_established(
    shapes, kw, code, axes, blocks_known
):
    p = plan(functions.get("double"), shapes, n_devices=8, **kw)
    assert p.problems[0].code == code and list(p.leaf_axes) == axes
    assert all((leaf.local_shape is not None) == blocks_known for leaf in p.leaves)
    assert p.devices_used == (8 if blocks_known else 0)
    p = plan(functions.get("add"), [(8, 3), (8, 3)], in_axes=(0,), n_devices=8)
    assert p.leaves == () and p.leaf_rows() == [("x", (8, 3), None), ("y", (8, 3), None)]


# broken settings a person types (fn, shapes with n for the device count, in_axes): each
# problem's "Apply" must give a plan this server can run
BROKEN = [
    ("batched_dot", ["{n}, 100, 3", "{n}, 1250000, 3"], [0, 0]),  # f's own vmap: sizes differ
    ("batched_dot", ["4, 100, 3", "{n}, 100, 3"], [1, 0]),  # mapped sizes differ
    ("batched_dot", ["{m}, 3", "{m}, 3"], [0, 0]),  # the mapped axis is over the device count
    ("double", ["{m}, 3"], [0]),
    ("add", ["{m}, 2", "{n}, 2"], [0, 0]),
]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 16])
@pytest.mark.parametrize(("fn", "shapes", "axes"), BROKEN)
def test_every_fix_offered_applies_and_replans_on_this_device_count(n, fn, shapes, axes):
    """Issue 53: 'Make them equal (e.g. 100 like x)' on 8 devices, where 100 is more than the
    devices. Every fix with an "apply" is applied here and planned again: it must plan."""
    from pmapviz.core.expressions import functions

    program = functions.get(fn)
    given = [tuple(int(d) for d in s.format(n=n, m=n * 10 + 1).split(",")) for s in shapes]
    before = planning.plan(program, given, in_axes=axes, n_devices=n)
    if before.ok:
        return
    plans, shapes_now, axes_now = [before], list(given), list(axes)
    for _ in range(4):  # a person pressing each problem's "Apply" in turn
        problem = next((p for p in plans[-1].problems if p.new_shapes or p.new_axes), None)
        assert problem is not None, [p.message for p in plans[-1].problems]
        for k, s in (problem.new_shapes or {}).items():
            shapes_now[k] = s
        for k, a in (problem.new_axes or {}).items():
            axes_now[k] = a
        plans.append(planning.plan(program, shapes_now, in_axes=axes_now, n_devices=n))
        if plans[-1].ok:
            break
    assert plans[-1].ok, [p.message for p in plans[-1].problems]
    assert plans[-1].devices_used <= n
