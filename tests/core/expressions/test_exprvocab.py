"""The allow-list: every allowed function, method and attribute against JAX itself, and the
list as data (collectives marked, nothing that allocates from a size)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax

from pmapviz.core.expressions import collectivedefs as defs
from pmapviz.core.expressions import expr
from pmapviz.core.expressions.exprvocab import ATTRIBUTES, FUNCTIONS, METHODS

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
    "jnp.concatenate": (
        "jnp.concatenate((x, y), axis=1)",
        lambda x, y, w: jnp.concatenate((x, y), axis=1),
    ),
    "jnp.stack": ("jnp.stack([x, y], 2)", lambda x, y, w: jnp.stack([x, y], 2)),
    "jnp.sum": (
        "jnp.sum(x, axis=0, keepdims=True, dtype='float32')",
        lambda x, y, w: jnp.sum(x, axis=0, keepdims=True, dtype="float32"),
    ),
    "jnp.std": ("jnp.std(x, 1, ddof=1)", lambda x, y, w: jnp.std(x, 1, ddof=1)),
    "jnp.cumsum": ("jnp.cumsum(x, axis=1)", lambda x, y, w: jnp.cumsum(x, axis=1)),
    "jnp.zeros_like": (
        "jnp.zeros_like(x, dtype='int32')",
        lambda x, y, w: jnp.zeros_like(x, dtype="int32"),
    ),
    "jnp.squeeze": ("jnp.squeeze(x[None], 0)", lambda x, y, w: jnp.squeeze(x[None], 0)),
    "lax.psum": ("lax.psum(x, 'i')", lambda x, y, w: lax.psum(x, "i")),
    "lax.pmean": ("lax.pmean(x, axis_name='i')", lambda x, y, w: lax.pmean(x, axis_name="i")),
    "lax.pmax": ("lax.pmax(x, 'i')", lambda x, y, w: lax.pmax(x, "i")),
    "lax.pmin": ("lax.pmin(x, 'i')", lambda x, y, w: lax.pmin(x, "i")),
    "lax.all_gather": (
        "lax.all_gather(x, 'i', axis=1, tiled=True)",
        lambda x, y, w: lax.all_gather(x, "i", axis=1, tiled=True),
    ),
    "lax.ppermute": (
        "lax.ppermute(x, 'i', perm=[(0, 1), (1, 0)])",
        lambda x, y, w: lax.ppermute(x, "i", perm=[(0, 1), (1, 0)]),
    ),
    "lax.psum_scatter": (
        "lax.psum_scatter(x, 'i', scatter_dimension=1, tiled=True)",
        lambda x, y, w: lax.psum_scatter(x, "i", scatter_dimension=1, tiled=True),
    ),
    "lax.all_to_all": (
        "lax.all_to_all(x, 'i', 1, 1, tiled=True)",
        lambda x, y, w: lax.all_to_all(x, "i", 1, 1, tiled=True),
    ),
    "lax.axis_index": ("lax.axis_index('i') + x", lambda x, y, w: lax.axis_index("i") + x),
    "jax.nn.gelu": (
        "jax.nn.gelu(x, approximate=False)",
        lambda x, y, w: jax.nn.gelu(x, approximate=False),
    ),
    "jax.nn.leaky_relu": (
        "jax.nn.leaky_relu(x - 0.5, 0.1)",
        lambda x, y, w: jax.nn.leaky_relu(x - 0.5, 0.1),
    ),
    "jax.nn.softmax": ("jax.nn.softmax(x, axis=0)", lambda x, y, w: jax.nn.softmax(x, axis=0)),
    "jax.nn.logsumexp": (
        "jax.nn.logsumexp(x, 1, keepdims=True)",
        lambda x, y, w: jax.nn.logsumexp(x, 1, keepdims=True),
    ),
    "jax.vmap": (
        "jax.vmap(jax.vmap(jnp.multiply), in_axes=(0, 0))(x, y)",
        lambda x, y, w: jax.vmap(jax.vmap(jnp.multiply), in_axes=(0, 0))(x, y),
    ),
    "jax.grad": (
        "jax.grad(lambda a, b: jnp.sum(jnp.sin(a) * b), argnums=1)(x, y)",
        lambda x, y, w: jax.grad(lambda a, b: jnp.sum(jnp.sin(a) * b), argnums=1)(x, y),
    ),
    "jax.value_and_grad": (
        "jax.value_and_grad(jnp.sum)(x)",
        lambda x, y, w: jax.value_and_grad(jnp.sum)(x),
    ),
}


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
        np.testing.assert_allclose(
            np.asarray(g, np.float64), np.asarray(v, np.float64), rtol=1e-6, atol=1e-7
        )


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
    """The collectives f may call are those whose record says how (collectivedefs.TypedCall),
    each a real lax function; nothing else in the allow-list is marked a collective."""
    collectives = {k for k, f in FUNCTIONS.items() if f.collective}
    typed = [c.typed for c in defs.COLLECTIVES if c.typed is not None]
    assert collectives == {f"lax.{t.name}" for t in typed}
    assert all(callable(getattr(lax, t.name)) for t in typed)
    assert {"lax.psum", "lax.ppermute", "lax.axis_index"} <= collectives
    assert all(FUNCTIONS[k].note for k in collectives)
    banned = {
        "zeros",
        "ones",
        "full",
        "empty",
        "arange",
        "linspace",
        "eye",
        "tile",
        "repeat",
        "pad",
        "broadcast_to",
        "load",
        "save",
        "fromfile",
        "frombuffer",
        "outer",
    }
    assert not {k for k in FUNCTIONS if k.rpartition(".")[2] in banned}
    assert "jax.nn.one_hot" not in FUNCTIONS
    assert len(FUNCTIONS) + len(METHODS) + len(ATTRIBUTES) > 100
