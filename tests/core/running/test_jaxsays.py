"""What JAX itself says about a pmap call: the lowering on abstract inputs raises exactly what
the real call raises (each case checked against the real call, made here), or nothing where
the call runs; and a plan for more devices than this process has gets a reason, not a guess."""

import numpy as np
import pytest

from pmapviz.core.devices import devicefacts
from pmapviz.core.expressions import expr, functions
from pmapviz.core.planning.planning import plan
from pmapviz.core.running import jaxsays
from tests.conftest import TEST_DEVICES

N = TEST_DEVICES


def real_call(program, shapes, in_axes, out_axes, axis_name, n, dtypes=None):
    """The real pmap call, on real (zero) arrays: its exception as JaxSaid, or None."""
    import jax
    import jax.numpy as jnp

    def zeros(tree, dtype):  # an argument as given: one shape, or a dict / tuple of them
        if isinstance(tree, dict):
            return {k: zeros(v, dtype) for k, v in tree.items()}
        if all(isinstance(d, int) for d in tree):
            return np.zeros(tree, dtype)
        return tuple(zeros(v, dtype) for v in tree)

    dtypes = dtypes or ["float32"] * len(shapes)
    args = [zeros(s, jnp.dtype(t)) for s, t in zip(shapes, dtypes, strict=True)]
    try:
        jax.pmap(
            program.build(axis_name),
            in_axes=in_axes,
            out_axes=out_axes,
            axis_name=axis_name,
            devices=devicefacts.local_devices_for_work()[:n],
        )(*args)
    except Exception as err:  # noqa: BLE001 -- what JAX raised is what is compared
        return jaxsays.said(err)
    return None


CASES = {  # name: (program, shapes, in_axes, out_axes, axis_name, n, a stable fragment)
    "10 rows on 8 devices": (
        functions.get("double"),
        [(10, 3)],
        0,
        0,
        None,
        8,
        "IndivisibleError",
    ),
    "16 rows on 8 devices": (
        functions.get("double"),
        [(16, 3)],
        0,
        0,
        None,
        8,
        "cannot select an axis to squeeze out",
    ),
    "10,000 rows on 1 device": (
        functions.get("batched_dot"),
        [(10_000, 3), (10_000, 3)],
        0,
        0,
        None,
        1,
        "shape=(10000, 3)",
    ),
    "in_axes past the rank": (functions.get("double"), [(8, 3)], 2, 0, None, 8, "IndexError"),
    "in_axes past the rank, second argument": (
        functions.get("add"),
        [(8, 3), (8, 3)],
        (0, 2),
        0,
        None,
        8,
        "rank",
    ),
    "all in_axes None": (
        functions.get("add"),
        [(8, 3), (8, 3)],
        (None, None),
        0,
        None,
        8,
        "at least one argument with a mapped axis",
    ),
    "unbound axis name": (
        expr.program("x", "lax.psum(x, 'j')"),
        [(8, 3)],
        0,
        0,
        "i",
        8,
        "unbound axis name: j",
    ),
    "no axis name at all": (
        functions.get("global_sum"),
        [(8, 3)],
        0,
        None,
        None,
        8,
        "NameError",
    ),
    "a pytree argument with a wrong prefix": (
        expr.program("x, p", "x * p['w'].sum()"),
        [(8, 3), {"w": (3, 2)}],
        (0, {"w": 5}),
        0,
        None,
        8,
        "Error",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_jax_says_what_the_real_call_raises(name):
    program, shapes, in_axes, out_axes, axis_name, n, fragment = CASES[name]
    p = plan(program, shapes, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, n_devices=n)
    assert not p.ok, name  # the planner refuses each of them too
    real = real_call(program, shapes, in_axes, out_axes, axis_name, n)
    assert real is not None, f"{name}: the real call ran"
    got = jaxsays.jax_says(program, p)
    assert got == real, name  # type and message, verbatim
    assert got.asked and fragment in got.text and got.text.startswith(got.error_type + ": ")


def test_ten_rows_on_eight_devices_is_named_as_a_traceback_names_it():
    p = plan(functions.get("double"), [(10, 3)], n_devices=8)
    got = jaxsays.jax_says(functions.get("double"), p)
    assert got.name == "IndivisibleError" and got.error_type.endswith(".IndivisibleError")
    assert "partitioned 8 times, but the dimension size is 10" in got.message
    p16 = plan(functions.get("double"), [(16, 3)], n_devices=8)
    said16 = jaxsays.jax_says(functions.get("double"), p16)
    assert (said16.error_type, said16.name) == ("ValueError", "ValueError")  # a builtin: bare
    assert "got shape=(2, 3) and dimensions=(0,)" in said16.message


@pytest.mark.parametrize(
    "program, shapes, in_axes, out_axes, axis_name, n",
    [
        (functions.get("double"), [(8, 3)], 0, 0, None, 8),
        (functions.get("double"), [(5, 3)], 0, 0, None, 8),  # 5 of the 8 devices
        (functions.get("global_sum"), [(N, 3)], 0, None, "i", N),
        (functions.get("batched_dot"), [(3, 7, 3), (3, 7, 3)], 0, 0, None, 3),
        (functions.get("double"), [(8, 3)], 0, -1, None, 8),  # misshaped, silently: no error
    ],
)
def test_a_call_jax_accepts_gets_none(program, shapes, in_axes, out_axes, axis_name, n):
    p = plan(program, shapes, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, n_devices=n)
    assert real_call(program, shapes, in_axes, out_axes, axis_name, n) is None
    assert jaxsays.jax_says(program, p) is None


def test_the_answer_is_kept_per_plan_and_allocates_nothing():
    """A second ask reads the kept answer (no new thread); a huge input is only lowered."""
    prog = functions.get("double")
    p = plan(prog, [(10_000_000_000, 3)], n_devices=8)  # 120 GB if it were made
    first = jaxsays.jax_says(prog, p)
    assert first.asked and "squeeze" in first.message
    kept = [k for k in jaxsays._KEPT if k[1] == p.key]
    assert len(kept) == 1 and jaxsays.jax_says(prog, p) is first


def test_a_plan_for_more_devices_than_this_process_has_says_why_jax_is_not_asked():
    have = len(devicefacts.local_devices_for_work())
    p = plan(functions.get("double"), [(have + 2, 3)], n_devices=have * 2)
    got = jaxsays.jax_says(functions.get("double"), p)
    assert not got.asked and got.text == "" and got.error_type == got.message == ""
    assert f"for {have * 2:,} devices" in got.not_asked and f"has {have:,}" in got.not_asked


def test_a_slow_lowering_is_not_waited_for_and_its_answer_arrives_later(monkeypatch):
    """The page waits at most ``limit_s``; the lowering ends in the background and the next
    ask reads it."""
    import threading

    release = threading.Event()
    real_ask = jaxsays.ask

    def slow(program, p, devices):
        release.wait(30)
        return real_ask(program, p, devices)

    monkeypatch.setattr(jaxsays, "ask", slow)
    prog = functions.get("double")
    p = plan(prog, [(11, 3)], n_devices=N)
    got = jaxsays.jax_says(prog, p, limit_s=0.05)
    assert not got.asked and "longer than 0.05 s" in got.not_asked
    release.set()
    later = jaxsays.jax_says(prog, p, limit_s=30)
    assert later.asked and later == real_call(prog, [(11, 3)], 0, 0, None, N)
