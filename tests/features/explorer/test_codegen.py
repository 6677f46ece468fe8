"""Exported scripts run as they are; both the pmap and the shard_map version give what numpy,
written here in the test from the script's own inputs, says they should."""

import json
import subprocess
import sys

import numpy as np
import pytest

from pmapviz.core.expressions import functions
from pmapviz.core.planning.planning import plan
from pmapviz.features.explorer import codegen

RUNNER = r"""
import json, runpy, sys
import numpy as np
res = {}
for case in sys.argv[1:]:  # each case's folder: its two scripts and the leaves' names
    res[case] = {}
    for key in ("pmap", "shard_map"):
        g = runpy.run_path(f"{case}/{key}_script.py")
        if key == "pmap":  # the inputs the script made, as float64, for the test's own numpy
            names = open(f"{case}/args.txt").read().split(",")
            np.savez(f"{case}/inputs.npz", *[np.asarray(g[a]).astype(np.float32)
                                              .astype(np.float64) for a in names])
        out = np.asarray(g["out"]).astype(np.float64)
        res[case][key] = {"shape": list(out.shape), "values": out.ravel()[:4000].tolist(),
                          "flat": list(g["flat"].shape) if "flat" in g else None}
print(json.dumps(res))
"""

# key, shapes, in_axes, out_axes, axis_name, dtype, and the global result by hand in numpy
CASES = [
    ("double", [(8, 4)], (0,), 0, None, "float32", lambda x: 2 * x),
    ("add", [(3, 8), (8, 3)], (1, 0), 1, None, "int32", lambda x, y: x + y.T),
    (
        "batched_dot",
        [(8, 50, 3), (8, 50, 3)],
        (0, 0),
        0,
        None,
        "float32",
        lambda x, y: (x * y).sum(axis=-1),
    ),
    (
        "matmul",
        [(4, 3, 5), (5, 2)],
        (0, None),
        0,
        None,
        "float32",
        lambda x, w: np.einsum("bij,jk->bik", x, w),
    ),
    ("normalise", [(8, 6)], (0,), 0, "dev", "float32", lambda x: x / x.sum()),
    ("global_sum", [(5, 3)], (0,), None, "i", "float32", lambda x: x.sum()),
    ("vdot", [(8, 3), (8, 3)], (0, 0), 0, None, "bfloat16", lambda x, y: (x * y).sum(axis=1)),
    ("local_sum", [(2, 7)], (0,), 0, None, "int32", lambda x: x.sum(axis=1)),
]


def _case_plan(key, shapes, in_axes, out_axes, axis_name, dtype):
    return plan(
        functions.get(key),
        shapes,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_name=axis_name,
        n_devices=8,
        dtypes=[dtype] * len(shapes),
    )


@pytest.fixture(scope="module")
def exported_runs(tmp_path_factory):
    """Every case's two scripts, written to a folder of its own and run as they are, all in
    one fresh Python (one JAX start for the eight cases, as the expression and tree tests
    below run theirs): {key: (the case's folder, its plan, what both scripts returned)}."""
    root = tmp_path_factory.mktemp("exported")
    cases = {}
    for key, shapes, in_axes, out_axes, axis_name, dtype, _ in CASES:
        p = _case_plan(key, shapes, in_axes, out_axes, axis_name, dtype)
        case = root / key
        case.mkdir()
        if p.ok:  # an invalid plan is not exported: its test says so
            (case / "pmap_script.py").write_text(codegen.pmap_script(functions.get(key), p))
            (case / "shard_map_script.py").write_text(
                codegen.shard_map_script(functions.get(key), p)
            )
            (case / "args.txt").write_text(",".join(leaf.name for leaf in p.leaves))
        cases[key] = (case, p)
    r = subprocess.run(
        [sys.executable, "-c", RUNNER, *(str(c) for c, p in cases.values() if p.ok)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    res = json.loads(r.stdout.strip().splitlines()[-1])
    return {key: (case, p, res.get(str(case))) for key, (case, p) in cases.items()}


@pytest.mark.parametrize(
    "key, shapes, in_axes, out_axes, axis_name, dtype, by_hand", CASES, ids=[c[0] for c in CASES]
)
def test_exported_scripts_run_and_agree(
    exported_runs, key, shapes, in_axes, out_axes, axis_name, dtype, by_hand
):
    case, p, res = exported_runs[key]
    assert p.ok, p.problems
    assert res is not None, f"{key}: the scripts were not run"
    with np.load(case / "inputs.npz") as f:
        inputs = [f[f"arr_{k}"] for k in range(len(shapes))]
    assert [a.shape for a in inputs] == [tuple(s) for s in shapes]
    want = np.asarray(by_hand(*inputs), np.float64)  # independent of pmapviz and of JAX
    assert tuple(res["pmap"]["shape"]) == want.shape == tuple(res["shard_map"]["shape"])
    assert want.shape == p.out_shapes
    tol = 2e-2 if dtype == "bfloat16" else 1e-5
    expected = want.ravel()[:4000].tolist()
    for impl in ("pmap", "shard_map"):
        got = res[impl]["values"]
        assert len(got) == len(expected)
        for a, b in zip(got, expected, strict=True):
            assert abs(a - b) <= tol * (1 + abs(b)), (impl, a, b)
    assert res["pmap"]["flat"] == res["shard_map"]["flat"]


def test_seed_script_reshapes_back_to_ten_million():
    program = functions.get("batched_dot")
    p = plan(program, [(8, 1_250_000, 3)] * 2, n_devices=8)
    text = codegen.pmap_script(program, p)
    assert "rng.standard_normal((8, 1_250_000, 3))" in text
    assert "jax.pmap(f, in_axes=(0, 0), out_axes=0, axis_name=None)(x, y)" in text
    assert "flat = out.reshape((10_000_000,))" in text
    assert 'jax.config.update("jax_num_cpu_devices", 8)' in text
    compile(text, "pmap_script.py", "exec")  # valid Python (compiled, never run here)
    sm = codegen.shard_map_script(program, p)
    assert "in_specs=(P('i'), P('i')), out_specs=P('i')" in sm
    compile(sm, "shard_map_script.py", "exec")


def test_axis_name_reaches_scripts_only_as_a_string_literal():
    program = functions.get("normalise")
    p = plan(program, [(8, 2)], axis_name="batch", n_devices=8)
    text = codegen.pmap_script(program, p)
    assert "lax.psum(jnp.sum(x), 'batch')" in text and "axis_name='batch'" in text


def test_invalid_plan_is_not_exported():
    program = functions.get("double")
    with pytest.raises(ValueError):
        codegen.pmap_script(program, plan(program, [(80, 2)], n_devices=8))


# ---------------------------------------------------------------- your own f, exported
EXPR_RUNNER = r"""
import runpy, sys
import numpy as np
for case in sys.argv[1:]:
    g = runpy.run_path(f"{case}/pmap_script.py")
    s = runpy.run_path(f"{case}/shard_map_script.py")
    names = open(f"{case}/args.txt").read().split(",")
    np.savez(f"{case}/out.npz", pmap=np.asarray(g["out"]), shard_map=np.asarray(s["out"]),
             **{f"in_{k}": np.asarray(g[n]) for k, n in enumerate(names)})
print("done")
"""


def random_expressions(seed: int, count: int) -> list[str]:
    """Shape-preserving expressions over x (per device (3, 4)) and w (3, 4), random but
    seeded: elementwise functions, operators, keepdims reductions and a psum over 'i'."""
    import random

    rng = random.Random(seed)
    unary = [
        "jnp.tanh({})",
        "jnp.sin({})",
        "jax.nn.relu({})",
        "jnp.square({})",
        "-{}",
        "jnp.sum({}, axis=-1, keepdims=True)",
        "lax.psum({}, 'i')",
        "jnp.abs({}) ** 2",
        "jnp.transpose(jnp.transpose({}))",
        "jax.nn.softmax({}, axis=0)",
    ]
    binary = ["({} + {})", "({} * {})", "({} - {})", "jnp.maximum({}, {})"]

    def grow(depth: int) -> str:
        if depth == 0 or rng.random() < 0.25:
            return rng.choice(["x", "w", "x", "0.5"])
        if rng.random() < 0.5:
            return rng.choice(unary).format(grow(depth - 1))
        return rng.choice(binary).format(grow(depth - 1), grow(depth - 1))

    out: list[str] = []
    while len(out) < count:
        body = grow(4)
        if "x" in body and "(" in body and body not in out:
            out.append(body)
    return out


def test_exported_expressions_run_and_match_the_apps_interpreted_f(tmp_path):
    import jax
    import numpy as np

    from pmapviz.core.expressions import expr

    bodies = [
        "jnp.tanh(x @ w.T)",
        "x / lax.psum(jnp.sum(x), 'i') + w",
        *random_expressions(seed=15, count=4),
    ]
    cases = []
    for k, body in enumerate(bodies):
        program = expr.program("x, w", body)
        p = plan(program, [(8, 3, 4), (3, 4)], in_axes=(0, None), axis_name="i", n_devices=8)
        assert p.ok, (body, p.problems)
        case = tmp_path / f"case{k}"
        case.mkdir()
        (case / "pmap_script.py").write_text(codegen.pmap_script(program, p))
        (case / "shard_map_script.py").write_text(codegen.shard_map_script(program, p))
        (case / "args.txt").write_text(",".join(leaf.name for leaf in p.leaves))
        assert body not in codegen.pmap_script(program, p).split('"""')[1]  # not in the title
        cases.append((program, p, case))
    r = subprocess.run(
        [sys.executable, "-c", EXPR_RUNNER, *(str(c) for _, _, c in cases)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    for (program, p, case), body in zip(cases, bodies, strict=True):
        saved = np.load(case / "out.npz")
        inputs = [saved[f"in_{k}"] for k in range(len(p.leaves))]
        interpreted = jax.pmap(
            program.build("i"), in_axes=p.leaf_axes, out_axes=p.out_axes, axis_name="i"
        )(*inputs)
        want = np.asarray(interpreted)
        assert want.shape == p.out_shapes == saved["pmap"].shape == saved["shard_map"].shape
        np.testing.assert_allclose(saved["pmap"], want, rtol=1e-5, atol=1e-5, err_msg=body)
        np.testing.assert_allclose(saved["shard_map"], want, rtol=1e-5, atol=1e-5)


TREE_RUNNER = r"""
import pickle, runpy, sys
import jax
import numpy as np
for case in sys.argv[1:]:
    g = runpy.run_path(f"{case}/pmap_script.py")
    s = runpy.run_path(f"{case}/shard_map_script.py")
    names = open(f"{case}/args.txt").read().split(",")
    host = lambda t: jax.tree.map(np.asarray, t)
    with open(f"{case}/out.pkl", "wb") as f:
        pickle.dump({"inputs": [host(g[n]) for n in names], "pmap": host(g["out"]),
                     "shard_map": host(s["out"])}, f)
print("done")
"""

# argument names, body, argument shape trees, in_axes prefixes, out_axes prefix
TREE_CASES = [
    ("x, p", "jnp.tanh(x @ p['w'] + p['b'])", [(8, 3, 5), {"w": (5, 2), "b": (2,)}], (0, None), 0),
    (
        "x, p",
        "x * p['scale'] + p['shift']",
        [(4, 6), {"scale": (6,), "shift": (4, 6)}],
        (0, {"scale": None, "shift": 0}),
        0,
    ),
    ("x, p", "(x * p[0], lax.psum(p[1], 'i'))", [(4, 3), ((4, 3), (4,))], (0, 0), (0, None)),
    (
        "x, p",
        "{'s': x + p['w'].sum(), 't': jnp.mean(x, axis=0)}",
        [(3, 2), {"w": (2, 3)}],
        (1, None),
        {"s": 1, "t": 0},
    ),
]


@pytest.fixture(scope="module")
def tree_runs(tmp_path_factory):
    """Every tree case's two scripts in a folder of its own, all run in one fresh Python:
    {case: (its folder, its program, its plan)} once every folder holds its out.pkl."""
    from pmapviz.core.expressions import expr

    root = tmp_path_factory.mktemp("trees")
    runs = {}
    for case, (args, body, shapes, in_axes, out_axes) in enumerate(TREE_CASES):
        program = expr.program(args, body)
        p = plan(program, shapes, in_axes=in_axes, out_axes=out_axes, axis_name="i", n_devices=8)
        folder = root / f"case{case}"
        folder.mkdir()
        if p.ok:  # a plan that is not ok is its test's failure
            (folder / "pmap_script.py").write_text(codegen.pmap_script(program, p))
            (folder / "shard_map_script.py").write_text(codegen.shard_map_script(program, p))
            (folder / "args.txt").write_text(",".join(a.name for a in p.arguments))
        runs[case] = (folder, program, p)
    r = subprocess.run(
        [sys.executable, "-c", TREE_RUNNER, *(str(f) for f, _, p in runs.values() if p.ok)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return runs


@pytest.mark.parametrize("case", range(len(TREE_CASES)))
def test_exported_scripts_with_pytree_arguments_match_vmap_on_the_raw_trees(tree_runs, case):
    """Dict and tuple arguments with in_axes / out_axes prefixes: the exported pmap and
    shard_map scripts run and agree with jax.vmap of the interpreted f on the script's own
    inputs, with the prefixes exactly as the user typed them."""
    import pickle

    import jax

    args, body, shapes, in_axes, out_axes = TREE_CASES[case]
    folder, program, p = tree_runs[case]
    assert p.ok, (body, p.problems)
    saved = pickle.loads((folder / "out.pkl").read_bytes())
    as_shapes = jax.tree.map(lambda a: tuple(a.shape), saved["inputs"])
    assert as_shapes == [shapes[0], shapes[1]]  # the scripts built the user's trees
    want = jax.vmap(program.build("i"), in_axes=in_axes, out_axes=out_axes, axis_name="i")(
        *saved["inputs"]
    )
    assert jax.tree.map(lambda a: tuple(a.shape), want) == p.out_shapes
    for impl in ("pmap", "shard_map"):
        assert jax.tree.structure(saved[impl]) == jax.tree.structure(want), impl
        for got, exp in zip(jax.tree.leaves(saved[impl]), jax.tree.leaves(want), strict=True):
            np.testing.assert_allclose(got, np.asarray(exp), rtol=1e-5, atol=1e-5, err_msg=impl)


def test_scripts_exported_on_a_gpu_server_use_its_gpus(fake_devices):
    """Exported on GPUs, the script claims no emulated devices and sets no CPU count; it
    checks it has the devices it needs and says how to emulate them elsewhere."""
    program = functions.get("batched_dot")
    p = plan(program, [(8, 1000, 3)] * 2, n_devices=8)
    with fake_devices("gpu"):
        pm, sm = codegen.pmap_script(program, p), codegen.shard_map_script(program, p)
        smap = codegen.smap_script(program, p)
    for text in (pm, sm, smap):
        assert "emulated" not in text and "jax.config.update" not in text
        assert "GPU server (NVIDIA H200)" in text and "assert jax.device_count() >= 8" in text
        compile(text, "script.py", "exec")
    assert '"jax_num_cpu_devices", 8' in codegen.pmap_script(program, p)  # on CPU, as before


# ---------------------------------------------------------------- the smap script
SMAP_RUNNER = r"""
import pickle, runpy, sys
import jax
import numpy as np
for case in sys.argv[1:]:  # each case's folder: its smap script and the arguments' names
    g = runpy.run_path(f"{case}/smap_script.py")
    names = open(f"{case}/args.txt").read().split(",")
    host = lambda t: jax.tree.map(lambda a: np.asarray(a).astype(np.float64), t)
    leaves = jax.tree.leaves(g["out"])
    with open(f"{case}/out.pkl", "wb") as f:
        pickle.dump({"inputs": [host(g[n]) for n in names], "out": host(g["out"]),
                     "types": [str(jax.typeof(a)) for a in leaves],
                     "flat": list(g["flat"].shape) if "flat" in g else None}, f)
print("done")
"""


@pytest.fixture(scope="module")
def smap_runs(tmp_path_factory):
    """Every case of CASES (Explicit axes, and the first three again with Auto axes) and every
    tree case, exported as an smap script and run as it is, all in one fresh Python."""
    from pmapviz.core.expressions import expr

    root = tmp_path_factory.mktemp("smap")
    runs = {}
    jobs = [(c[0], c, "Explicit") for c in CASES] + [(f"{c[0]}-auto", c, "Auto") for c in CASES[:3]]
    for name, (key, shapes, in_axes, out_axes, axis_name, dtype, _), mode in jobs:
        program = functions.get(key)
        runs[name] = (program, _case_plan(key, shapes, in_axes, out_axes, axis_name, dtype), mode)
    for k, (args, body, shapes, in_axes, out_axes) in enumerate(TREE_CASES):
        program = expr.program(args, body)
        p = plan(program, shapes, in_axes=in_axes, out_axes=out_axes, axis_name="i", n_devices=8)
        runs[f"tree{k}"] = (program, p, "Explicit")
    for name, (program, p, mode) in runs.items():
        folder = root / name
        folder.mkdir()
        (folder / "smap_script.py").write_text(codegen.smap_script(program, p, mode=mode))
        (folder / "args.txt").write_text(",".join(a.name for a in p.arguments))
    r = subprocess.run(
        [sys.executable, "-c", SMAP_RUNNER, *(str(root / name) for name in runs)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    return root, runs


def _smap_saved(smap_runs, name):
    import pickle

    root, runs = smap_runs
    return runs[name], pickle.loads((root / name / "out.pkl").read_bytes())


@pytest.mark.parametrize(
    "key, shapes, in_axes, out_axes, axis_name, dtype, by_hand", CASES, ids=[c[0] for c in CASES]
)
def test_the_smap_script_runs_and_matches_numpy(
    smap_runs, key, shapes, in_axes, out_axes, axis_name, dtype, by_hand
):
    """The same check as the pmap and shard_map scripts': numpy, written here, on the script's
    own inputs; with Explicit axes, smap's output type says it is split over the mesh axis."""
    for name in (key, f"{key}-auto"):
        if name not in smap_runs[1]:
            continue
        (_, p, mode), saved = _smap_saved(smap_runs, name)
        want = np.asarray(by_hand(*[np.asarray(a) for a in saved["inputs"]]), np.float64)
        assert saved["out"].shape == want.shape == p.out_shapes, name
        tol = 2e-2 if dtype == "bfloat16" else 1e-5
        np.testing.assert_allclose(saved["out"], want, rtol=tol, atol=tol, err_msg=name)
        split = "@" in saved["types"][0]
        assert split == (mode == "Explicit" and p.out_axes is not None), saved["types"]
        if key == "double" and mode == "Explicit":
            assert saved["flat"] == [32]  # reshaped back, as the pmap script does


@pytest.mark.parametrize("case", range(len(TREE_CASES)))
def test_the_smap_script_with_pytree_arguments_matches_vmap(smap_runs, case):
    import jax

    args, body, shapes, in_axes, out_axes = TREE_CASES[case]
    (program, p, _), saved = _smap_saved(smap_runs, f"tree{case}")
    want = jax.vmap(program.build("i"), in_axes=in_axes, out_axes=out_axes, axis_name="i")(
        *saved["inputs"]
    )
    assert jax.tree.structure(saved["out"]) == jax.tree.structure(want)
    for got, exp in zip(jax.tree.leaves(saved["out"]), jax.tree.leaves(want), strict=True):
        np.testing.assert_allclose(got, np.asarray(exp), rtol=1e-5, atol=1e-5)


def test_the_smap_script_reshards_under_explicit_axes_and_not_under_auto():
    program = functions.get("matmul")
    p = plan(program, [(4, 3, 5), (5, 2)], in_axes=(0, None), n_devices=8)
    text = codegen.smap_script(program, p)
    assert "mesh = jax.make_mesh((4,), ('i',), devices=jax.devices()[:4])" in text
    assert "    x = jax.reshard(x, P('i'))" in text and "w = jax.reshard" not in text
    assert "jax.smap(f_block, in_axes=(0, None), out_axes=0, axis_name='i')(x, w)" in text
    auto = codegen.smap_script(program, p, mode="Auto")
    assert "axis_types=(AxisType.Auto,)" in auto and "jax.reshard" not in auto
    with pytest.raises(ValueError):
        codegen.smap_script(program, p, mode="Manual")
    with pytest.raises(ValueError):
        codegen.smap_script(program, plan(program, [(80, 3, 5), (5, 2)], n_devices=8))
