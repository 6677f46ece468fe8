"""The catalog: every function builds, is cached per axis name, and agrees with its numpy twin
and with the source line that code export writes."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmapviz.core.expressions import functions

RNG = np.random.default_rng(0)
ARGS = {
    "x": RNG.standard_normal((4, 3)).astype(np.float32),
    "y": RNG.standard_normal((4, 3)).astype(np.float32),
    "w": RNG.standard_normal((3, 2)).astype(np.float32),
}


@pytest.mark.parametrize("key", list(functions.BY_KEY))
def test_every_function_matches_its_source_line(key):
    p = functions.get(key)
    args = [ARGS[a] for a in p.arg_names]
    if p.key == "vdot":
        args = [a[0] for a in args]
    fn = p.build("i")
    assert fn is p.build("i")  # cached: traces and compilations can be reused
    # the source line, as code export writes it, run under vmap with the same axis name
    namespace = {"jnp": jnp, "jax": jax, "lax": jax.lax}
    src = jax.vmap(lambda *a: _from_source(p, namespace)(*a), axis_name="i")
    got = jax.vmap(fn, axis_name="i")(*[np.stack([a, a]) for a in args])
    want = src(*[np.stack([a, a]) for a in args])
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    twin = functions.numpy_fn(key)
    if twin is not None:
        np.testing.assert_allclose(np.asarray(fn(*args)), twin(*args), rtol=1e-5, atol=1e-6)


def _from_source(p, namespace):
    """The catalog's own source text, bound by a tiny dispatcher, not evaluated: the text is
    checked against an explicit table of what each body means."""
    table = {
        "x * 2": lambda x: x * 2,
        "x + y": lambda x, y: x + y,
        "jnp.vdot(x, y)": lambda x, y: jnp.vdot(x, y),
        "jax.vmap(jnp.dot)(x, y)": lambda x, y: jax.vmap(jnp.dot)(x, y),
        "x @ w": lambda x, w: x @ w,
        "jnp.sum(x)": lambda x: jnp.sum(x),
        "x / lax.psum(jnp.sum(x), 'i')": lambda x: x / jax.lax.psum(jnp.sum(x), "i"),
        "lax.psum(jnp.sum(x), 'i')": lambda x: jax.lax.psum(jnp.sum(x), "i"),
    }
    return table[p.body("i")]


def test_defaults_fit_the_arguments():
    for p in functions.PROGRAMS:
        assert len(p.default_shapes) == len(p.default_in_axes) == p.n_args
        assert p.signature() == f"def f({', '.join(p.arg_names)}):"
    assert max(p.n_args for p in functions.PROGRAMS) == functions.MAX_ARGS
