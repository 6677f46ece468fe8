"""A notebook's arguments read as pmap reads them: each leaf's shape and JAX's dtype, one
in_axes entry per argument, and the one size every mapped axis has; each refusal names the
problem and the fix."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from pmapviz.features.compiled.functionargs import axes, mapped_size, struct


def sds(*shape, dtype=jnp.float32):
    """A jax.ShapeDtypeStruct of ``shape``."""
    return jax.ShapeDtypeStruct(shape, dtype)


def test_struct_takes_the_shape_and_jaxs_canonical_dtype():
    assert struct(np.ones((2, 3))) == sds(2, 3)  # float64 becomes float32 without x64
    assert struct(np.zeros(4, np.int64)) == sds(4, dtype=jnp.int32)
    assert struct(np.zeros(1, jnp.bfloat16)) == sds(1, dtype=jnp.bfloat16)
    assert struct(sds(8, 5)) == sds(8, 5)
    assert struct(jnp.ones((3,), jnp.int8)) == sds(3, dtype=jnp.int8)


def test_struct_reads_plain_python_values():
    assert struct(2.5) == sds(dtype=jnp.float32)
    assert struct([1, 2, 3]) == sds(3, dtype=jnp.int32)
    assert struct([[True], [False]]) == sds(2, 1, dtype=jnp.bool_)


def test_axes_gives_one_entry_per_argument():
    assert axes(0, 3) == (0, 0, 0)
    assert axes(None, 2) == (None, None)
    assert axes((0, None), 2) == (0, None)
    assert axes([1, -1], 2) == (1, -1)


@pytest.mark.parametrize(("in_axes", "count"), [((0,), 2), ((0, 0, 0), 2), (True, 1), ("0", 1)])
def test_axes_refuses_what_is_not_one_int_or_none_per_argument(in_axes, count):
    with pytest.raises(ValueError) as err:
        axes(in_axes, count)
    message = str(err.value)
    assert repr(in_axes) in message and f"each of the {count} argument(s)" in message
    assert "Fix: in_axes=0" in message


def test_mapped_size_is_the_size_every_mapped_axis_has():
    assert mapped_size([sds(8, 3), sds(5)], (0, None)) == 8
    assert mapped_size([sds(3, 6), {"a": sds(6), "b": sds(2, 6)}], (1, -1)) == 6


def test_mapped_size_refuses_an_axis_the_argument_does_not_have():
    with pytest.raises(ValueError) as err:
        mapped_size([sds(8, 3)], (2,))
    message = str(err.value)
    assert "argument 0" in message and "no axis 2" in message
    assert "Fix:" in message and "below 2" in message


def test_mapped_size_refuses_when_nothing_is_mapped():
    with pytest.raises(ValueError, match="every in_axes is None.*Fix: .*in_axes=0"):
        mapped_size([sds(8)], (None,))


def test_mapped_size_refuses_mapped_axes_of_different_sizes_naming_each():
    with pytest.raises(ValueError) as err:
        mapped_size([sds(8, 3), sds(4)], (0, 0))
    message = str(err.value)
    assert "argument 0" in message and "argument 1" in message
    assert ": 8" in message and ": 4" in message
    assert "Fix: make them equal" in message
