"""The oracle: the typed program of every case below, in the three modes, by plain JAX, without
pmapviz.

    python tests/features/types/types_oracle.py COUNT [NAME ...]

starts JAX with COUNT CPU devices and prints one line, ``MARK`` then JSON: per case and mode,
the inputs' and outputs' types and every equation of the jaxpr in walk order (each nested jaxpr
after its equation) as ``[depth, primitive, [str(outvar.aval.str_short(short_dtypes=True))]]``,
JAX's error type where JAX refuses the mode, and every collective of the compiled HLO as
``[kind, the op_name's last part, source line]``, read from the HLO text with its own regular
expressions. The modes are built as pmapviz documents them: Auto, ``jax.jit(f)`` on a mesh of
``AxisType.Auto``; Explicit, the same on ``jax.make_mesh``'s Explicit axes under
``jax.set_mesh``; Manual, ``jax.jit(jax.shard_map(local or f, in_specs, out_specs,
check_vma=True))`` on the Explicit mesh. tests/features/types/test_typedprogram.py compares
pmapviz's typed view (``pmapviz.types``) with this. The cases (:data:`CASES`) are plain JAX;
this file imports nothing of pmapviz, on purpose.
"""

import json
import os
import re
import sys

MARK = "ORACLE "
MODES = ("auto", "explicit", "manual")
KINDS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


def meshes(n):
    """The two meshes a case may use on ``n`` devices: one axis, and two (2 x n/2, or n x 1)."""
    two = (n // 2, 2) if n % 2 == 0 and n >= 2 else (n, 1)
    return {"one": ((n,), ("i",)), "two": (two, ("data", "model"))}


def cases(n):
    """Every case: name -> (mesh key, f, local f or None, arg shapes (a dict: a pytree),
    dtype, in_specs, Manual's out_specs), sized for ``n`` devices."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    rows = meshes(n)["two"][0][0]
    cols = meshes(n)["two"][0][1]
    R, C, K = 8 * rows, 8 * cols, 4 * n  # noqa: N806
    ring = [(k, (k + 1) % n) for k in range(n)]

    def loop(x, w):
        for _ in range(3):
            x = jnp.tanh(x @ w)
        return x

    def scan(x):
        return lax.scan(lambda c, r: (c + r, c * r), jnp.zeros(x.shape[1:], x.dtype), x)[1]

    return {
        "scale": ("one", lambda x: x * 2, None, [(K, 3)], "float32", ["i"], "i"),
        "add": ("one", lambda x, y: x + y, None, [(K, 3), (K, 3)], "float32", ["i", "i"], "i"),
        "rows": (
            "two",
            lambda x, w: x @ w,
            None,
            [(R, 16), (16, C)],
            "float32",
            [("data", None), ()],
            ("data", None),
        ),
        "cols": (
            "two",
            lambda x, w: x @ w,
            None,
            [(R, 16), (16, C)],
            "float32",
            [(), (None, "model")],
            (None, "model"),
        ),
        "both": (
            "two",
            lambda x, w: x @ w,
            None,
            [(R, 16), (16, C)],
            "float32",
            [("data", None), (None, "model")],
            ("data", "model"),
        ),
        "contract": (
            "two",
            lambda x, w: x @ w,
            lambda x, w: lax.psum(x @ w, "data"),
            [(R, R), (R, C)],
            "float32",
            [(None, "data"), ("data", None)],
            (),
        ),
        "sum0": (
            "two",
            lambda x: x.sum(axis=0),
            lambda x: lax.psum(x.sum(axis=0), "data"),
            [(R, C)],
            "float32",
            [("data", None)],
            (),
        ),
        "sum1": (
            "two",
            lambda x: x.sum(axis=1),
            None,
            [(R, C)],
            "float32",
            [("data", None)],
            "data",
        ),
        "mean": (
            "one",
            lambda x: x.mean(),
            lambda x: lax.pmean(x.mean(), "i"),
            [(K, 5)],
            "float32",
            ["i"],
            (),
        ),
        "mlp": (
            "two",
            lambda x, w1, w2: jnp.tanh(x @ w1) @ w2,
            lambda x, w1, w2: lax.psum(jnp.tanh(x @ w1) @ w2, "model"),
            [(R, 8), (8, C), (C, 4)],
            "float32",
            [("data", None), (None, "model"), ("model", None)],
            ("data", None),
        ),
        "softmax": (
            "one",
            lambda x: jax.nn.softmax(x, axis=-1),
            None,
            [(K, 6)],
            "float32",
            ["i"],
            "i",
        ),
        "transpose": (
            "two",
            lambda x: x.T,
            None,
            [(R, C)],
            "float32",
            [("data", None)],
            (None, "data"),
        ),
        "reshape": (
            "one",
            lambda x: x.reshape(K, 2, 3),
            lambda x: x.reshape(x.shape[0], 2, 3),
            [(K, 6)],
            "float32",
            ["i"],
            "i",
        ),
        "outer": (
            "one",
            lambda x, y: x[:, None] * y[None, :],
            None,
            [(K,), (5,)],
            "float32",
            ["i", ()],
            "i",
        ),
        "layer_norm": (
            "two",
            lambda x: (x - x.mean(-1, keepdims=True)) / (x.std(-1, keepdims=True) + 1e-5),
            None,
            [(R, C)],
            "float32",
            [("data", None)],
            ("data", None),
        ),
        "clip_cast": (
            "one",
            lambda x: jnp.clip(x, -1, 1).astype(jnp.int32),
            None,
            [(K, 3)],
            "float32",
            ["i"],
            "i",
        ),
        "concat": (
            "one",
            lambda x, y: jnp.concatenate([x, y], axis=1),
            None,
            [(K, 2), (K, 3)],
            "float32",
            ["i", "i"],
            "i",
        ),
        "where": (
            "one",
            lambda x, y: jnp.where(x > 0, x, y),
            None,
            [(K, 3), (K, 3)],
            "float32",
            ["i", "i"],
            "i",
        ),
        "cumsum": ("one", lambda x: jnp.cumsum(x, axis=1), None, [(K, 5)], "float32", ["i"], "i"),
        "einsum": (
            "two",
            lambda a, b: jnp.einsum("bij,bjk->bik", a, b),
            None,
            [(R, 3, 4), (R, 4, 2)],
            "float32",
            [("data",), ("data",)],
            "data",
        ),
        "psum": (
            "one",
            lambda x: x.sum(axis=0, keepdims=True),
            lambda x: lax.psum(x, "i"),
            [(K, 3)],
            "float32",
            ["i"],
            (),
        ),
        "gather": (
            "one",
            lambda x: x * 1,
            lambda x: lax.all_gather(x, "i", tiled=True),
            [(K, 3)],
            "float32",
            ["i"],
            "i",
        ),
        "ppermute": (
            "one",
            lambda x: jnp.roll(x, 4, axis=0),
            lambda x: lax.ppermute(x, "i", ring),
            [(K, 3)],
            "float32",
            ["i"],
            "i",
        ),
        "scatter": (
            "one",
            lambda x: x * 1,
            lambda x: lax.psum_scatter(x, "i", tiled=True),
            [(K * n, 2)],
            "float32",
            [()],
            "i",
        ),
        "all_to_all": (
            "one",
            lambda x: x * 1,
            lambda x: lax.all_to_all(x, "i", 1, 0, tiled=True),
            [(K, n)],
            "float32",
            ["i"],
            "i",
        ),
        "pmax": (
            "one",
            lambda x: x.max(axis=0),
            lambda x: lax.pmax(x.max(axis=0), "i"),
            [(K, 3)],
            "float32",
            ["i"],
            (),
        ),
        "axis_index": (
            "one",
            lambda x: x + 1,
            lambda x: x + lax.axis_index("i"),
            [(K, 3)],
            "int32",
            ["i"],
            "i",
        ),
        "pytree": (
            "one",
            lambda d: d["a"] + d["b"],
            None,
            [{"a": (K, 3), "b": (K, 3)}],
            "float32",
            ["i"],
            "i",
        ),
        "two_outputs": (
            "one",
            lambda x: (x * 2, x.sum()),
            lambda x: (x * 2, lax.psum(x.sum(), "i")),
            [(K, 3)],
            "float32",
            ["i"],
            ["i", ()],
        ),
        "cond": (
            "one",
            lambda x: lax.cond(x.sum() > 0, lambda v: v, lambda v: -v, x),
            None,
            [(K, 3)],
            "float32",
            ["i"],
            "i",
        ),
        "scan": ("one", scan, None, [(K, 3)], "float32", [()], ()),
        "seed_dot": ("one", jax.vmap(jnp.dot), None, [(K, 3), (K, 3)], "float32", ["i", "i"], "i"),
        "loop": (
            "two",
            loop,
            None,
            [(R, 8), (8, 8)],
            "float32",
            [("data", None), ()],
            ("data", None),
        ),
        "bf16": (
            "two",
            lambda x, w: (x @ w).astype(jnp.float32),
            None,
            [(R, 16), (16, C)],
            "bfloat16",
            [("data", None), (None, "model")],
            ("data", "model"),
        ),
        "relu_grad": (
            "one",
            lambda x: jax.grad(lambda v: jax.nn.relu(v).sum())(x),
            None,
            [(K, 3)],
            "float32",
            ["i"],
            "i",
        ),
        "unreduced": (
            "two",
            lambda x, w: jnp.matmul(x, w, out_sharding=jax.P(None, None, unreduced={"data"})),
            None,
            [(C, R), (R, C)],
            "float32",
            [(None, "data"), ("data", None)],
            (),
        ),
    }


def structs(shapes, dtype):
    """Each argument as a ShapeDtypeStruct (a dict of them for a pytree argument)."""
    import jax

    def one(s):
        return jax.ShapeDtypeStruct(s, dtype)

    return [({k: one(v) for k, v in s.items()} if isinstance(s, dict) else one(s)) for s in shapes]


def spec(entry):
    """A spec as the cases write it: an axis name, a tuple of entries, or () for P()."""
    import jax

    if isinstance(entry, str):
        return jax.P(entry)
    return jax.P(*entry)


def out_spec(entry):
    """Manual's out_specs: a spec, or a list of specs (a case with several outputs)."""
    if isinstance(entry, list):
        return tuple(spec(e) for e in entry)
    return spec(entry)


def mode_program(case, n, mode):
    """(function to jit, arguments placed, the mesh) of one case in one mode."""
    import jax
    from jax.sharding import AxisType, NamedSharding

    mesh_key, f, local, shapes, dtype, in_specs, outs = case
    shape, names = meshes(n)[mesh_key]
    kind = AxisType.Auto if mode == "auto" else AxisType.Explicit
    mesh = jax.make_mesh(shape, names, axis_types=(kind,) * len(shape))
    args = []
    for a, s in zip(structs(shapes, dtype), in_specs, strict=True):
        sharding = NamedSharding(mesh, spec(s))
        args.append(
            jax.tree.map(
                lambda x, sh=sharding: jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sh), a
            )
        )
    if mode == "manual":
        fn = jax.shard_map(
            local or f,
            mesh=mesh,
            in_specs=tuple(spec(s) for s in in_specs),
            out_specs=out_spec(outs),
            check_vma=True,
        )
    else:
        fn = f
    return fn, args, mesh


def walk(jaxpr, depth, rows):
    """Every equation in order, each nested jaxpr after its equation, one level deeper."""
    from jax.extend.core import jaxprs_in_params

    for eqn in jaxpr.eqns:
        rows.append(
            [depth, eqn.primitive.name, [v.aval.str_short(short_dtypes=True) for v in eqn.outvars]]
        )
        for sub in jaxprs_in_params(eqn.params):
            walk(sub, depth + 1, rows)
    return rows


def hlo_collectives(text):
    """[kind, op_name's last part, source line] of every collective in HLO text."""
    files = dict(re.findall(r'^([0-9]+) "(.*)"$', text.split("\nFunctionNames")[0], re.M))
    locations = {
        k: int(line)
        for k, line in re.findall(
            r"^([0-9]+) \{file_name_id=[0-9]+ function_name_id=[0-9]+ line=([0-9]+)", text, re.M
        )
    }
    frames = {
        k: locations.get(loc)
        for k, loc in re.findall(r"^([0-9]+) \{file_location_id=([0-9]+)", text, re.M)
    }
    assert files or not frames
    found = []
    for line in text.splitlines():
        m = re.match(rf"^\s*(?:ROOT\s+)?%\S+\s*=\s*.*?\s({'|'.join(KINDS)})(?:-start)?\(", line)
        if not m:
            continue
        op = re.search(r'op_name="([^"]*)"', line)
        frame = re.search(r"stack_frame_id=([0-9]+)", line)
        found.append(
            [
                m[1],
                op[1].rsplit("/", 1)[-1] if op else None,
                frames.get(frame[1]) if frame else None,
            ]
        )
    return found


def typed(case, n, mode):
    """One case in one mode, as plain data (see the module's docstring)."""
    import jax

    fn, args, mesh = mode_program(case, n, mode)
    try:
        with jax.set_mesh(mesh):
            traced = jax.jit(fn).trace(*args)
    except Exception as err:  # noqa: BLE001 - JAX's refusal is the answer
        return {"error": type(err).__name__, "stage": "trace"}
    jaxpr = traced.jaxpr
    out = {
        "in_types": [v.aval.str_short(short_dtypes=True) for v in jaxpr.jaxpr.invars],
        "out_types": [v.aval.str_short(short_dtypes=True) for v in jaxpr.jaxpr.outvars],
        "rows": walk(jaxpr.jaxpr, 0, []),
    }
    try:
        with jax.set_mesh(mesh):
            compiled = traced.lower().compile()
    except Exception as err:  # noqa: BLE001
        return {**out, "error": type(err).__name__, "stage": "compile"}
    return {**out, "error": None, "collectives": hlo_collectives(compiled.as_text())}


def main(argv):
    n = int(argv[1])
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={n}"
    import jax

    jax.config.update("jax_enable_compilation_cache", False)
    everything = cases(n)
    names = argv[2:] or list(everything)
    result = {name: {m: typed(everything[name], n, m) for m in MODES} for name in names}
    print(MARK + json.dumps(result))


if __name__ == "__main__":
    main(sys.argv)
