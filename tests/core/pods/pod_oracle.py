"""The oracle: the same programs compiled for the same TPU slices by plain JAX, without pmapviz.

    python tests/core/pods/pod_oracle.py v5e:2x4 dot train psum f typed_step
    python tests/core/pods/pod_oracle.py v5e:2x4 --slices 2 train psum
    python tests/core/pods/pod_oracle.py v5e:2x4 --hosts 2,4,1 train psum
    python tests/core/pods/pod_oracle.py v5e:2x4 --slices 2 --pmap psum ppermute mesh_psum step

prints one JSON object: per program, the figures read straight from ``get_topology_desc`` and
``compile()`` (memory_analysis, cost_analysis, and each all-reduce/all-gather's kind and replica
groups as device ids). With ``--slices N``: N slices (``num_slices``), the train step and the
psum on a ("dcn", "chips") mesh laid by ``create_hybrid_device_mesh``, and every collective
with its network: ICI where its groups stay in one slice, DCN for the megascale send/recv
(device k of each slice named in ``_xla_megascale_target``). With ``--hosts A,B,C``: libtpu's
``chips_per_host_bounds`` (hosts as rented), each device's host and each collective's groups that
cross hosts. With ``--pmap`` (issue 66, the Compiled and Training pages on several slices): a
``jax.pmap`` over every device of every slice (libtpu's order) of a collective on f32[n, 1024]
(``psum``, ``ppermute`` a ring right, ``all_to_all`` tiled) and of the linear data-parallel step
(``step``), and each collective's twin on a ("dcn", "i") mesh, the collective over
("dcn", "i") (``mesh_psum``, ...).
tests/core/pods/test_podcompile.py compares pmapviz's page and CLI figures with these. It
imports nothing of pmapviz, on purpose.
"""

import json
import os
import re
import sys

os.environ.setdefault("JAX_PLATFORMS", "cpu")
os.environ.setdefault("TPU_SKIP_MDS_QUERY", "1")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.experimental import mesh_utils, topologies  # noqa: E402
from jax.sharding import Mesh, NamedSharding  # noqa: E402
from jax.sharding import PartitionSpec as P  # noqa: E402

jax.config.update("jax_enable_compilation_cache", False)


def mesh_of(devices, shape, names):
    try:
        grid = mesh_utils.create_device_mesh(shape, devices=list(devices))
    except Exception:  # noqa: BLE001
        grid = np.array(devices).reshape(shape)
    return Mesh(grid, names)


def sds(shape, mesh, spec):
    return jax.ShapeDtypeStruct(shape, jnp.float32, sharding=NamedSharding(mesh, spec))


def programs(devices):
    n = len(devices)
    chips = mesh_of(devices, (n,), ("chips",))
    rows = -(-10_000_000 // n) * n
    two_d = mesh_of(devices, (2, n // 2), ("data", "model"))

    def step(w, x):
        return w - 0.01 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)

    def psum(x):
        return jax.shard_map(
            lambda b: jax.lax.psum(b, "chips"), in_specs=P("chips"), out_specs=P("chips")
        )(x)

    yield "dot", chips, jax.vmap(jnp.dot), [sds((rows, 3), chips, P("chips"))] * 2
    yield (
        "train",
        chips,
        step,
        [
            sds((4096, 4096), chips, P()),
            sds((-(-8192 // n) * n, 4096), chips, P("chips")),
        ],
    )
    yield "psum", chips, psum, [sds((4096 * n, 4096), chips, P("chips"))]
    yield (  # the training step as a user types it (pmapviz pod --f ..., jax.grad of a lambda)
        "typed_step",
        chips,
        lambda x, w: w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w),
        [sds((64 * n, 512), chips, P("chips", None)), sds((512, 512), chips, P())],
    )
    yield (
        "f",
        two_d,
        lambda x, w: jnp.tanh(x @ w),
        [
            sds((256, 512), two_d, P("data", None)),
            sds((512, 1024), two_d, P(None, "model")),
        ],
    )


def sliced_programs(devices, slices):
    """The train step, the psum and the typed step on a ("dcn", "chips") = slices x per-slice
    mesh."""
    per = len(devices) // slices
    grid = mesh_utils.create_hybrid_device_mesh((1, per), (slices, 1), devices=list(devices))
    mesh = Mesh(grid, ("dcn", "chips"))
    both = ("dcn", "chips")

    def step(w, x):
        return w - 0.01 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w)

    def psum(x):
        return jax.shard_map(lambda b: jax.lax.psum(b, both), in_specs=P(both), out_specs=P(both))(
            x
        )

    n = len(devices)
    yield (
        "train",
        mesh,
        step,
        [sds((4096, 4096), mesh, P()), sds((-(-8192 // n) * n, 4096), mesh, P(both))],
    )
    yield "psum", mesh, psum, [sds((4096 * n, 4096), mesh, P(both))]
    yield (  # the typed step (pmapviz pod --f ... --mesh <one slice's>): x's rows over both axes
        "typed_step",
        mesh,
        lambda x, w: w - 0.1 * jax.grad(lambda w: jnp.mean(jnp.tanh(x @ w) ** 2))(w),
        [sds((64 * n, 512), mesh, P(both, None)), sds((512, 512), mesh, P())],
    )


PMAP_M, STEP_LB, STEP_FEATURES, STEP_LR = 1024, 32, 8, 0.05  # the pages' sizes


def pmap_programs(devices, slices):
    """The pages' pmaps over every slice's devices (libtpu's order, slice by slice), each
    collective's twin on a ("dcn", "i") mesh, and the linear data-parallel step."""
    n, per = len(devices), len(devices) // slices
    ring = [(k, (k + 1) % n) for k in range(n)]
    mesh = Mesh(np.array(devices).reshape(slices, per), ("dcn", "i"))
    both = ("dcn", "i")
    bodies = {
        "psum": lambda a, ax: jax.lax.psum(a, ax),
        "ppermute": lambda a, ax: jax.lax.ppermute(a, ax, ring),
        "all_to_all": lambda a, ax: jax.lax.all_to_all(a, ax, 0, 0, tiled=True),
    }
    x = jax.ShapeDtypeStruct((n, PMAP_M), jnp.float32)
    for name, body in bodies.items():
        yield name, devices, jax.pmap(lambda a, b=body: b(a, "i"), "i", devices=devices), [x]
        twin = jax.shard_map(
            lambda blk, b=body: b(blk[0], both)[None],
            mesh=mesh,
            in_specs=P(both),
            out_specs=P(both),
        )
        yield "mesh_" + name, list(mesh.devices.flat), jax.jit(twin), [sds(x.shape, mesh, P(both))]

    def norm(tree):
        return jnp.sqrt(sum(jnp.sum(g.astype(jnp.float32) ** 2) for g in jax.tree.leaves(tree)))

    def step(params, x, y):
        loss = lambda p, x, y: jnp.mean((x @ p["w"] + p["b"] - y) ** 2)  # noqa: E731
        local_loss, grads = jax.value_and_grad(loss)(params, x, y)
        local_norm = norm(grads)
        grads = jax.lax.pmean(grads, "batch")
        new = jax.tree.map(lambda p, g: p - STEP_LR * g, params, grads)
        return new, local_loss, local_norm, norm(grads)

    f32 = jnp.float32
    params = {
        "b": jax.ShapeDtypeStruct((n,), f32),
        "w": jax.ShapeDtypeStruct((n, STEP_FEATURES), f32),
    }
    data = [jax.ShapeDtypeStruct((n, STEP_LB, STEP_FEATURES), f32)]
    data += [jax.ShapeDtypeStruct((n, STEP_LB), f32)]
    yield "step", devices, jax.pmap(step, "batch", devices=devices), [params, *data]


def groups_of(line):
    """Replica groups as HLO numbers: explicit {{..},{..}}, iota [g,s]<=[n], or mesh[...]{...}."""
    if m := re.search(r"replica_groups=\{((?:\{[0-9,]*\},?)*)\}", line):
        return [[int(d) for d in g.split(",") if d] for g in re.findall(r"\{([0-9,]*)\}", m[1])]
    if m := re.search(r"replica_groups=\[([0-9]+),([0-9]+)\]<=\[([0-9]+)\](\S*)", line):
        assert not m[4].startswith("T"), "transposed iota: not read by the oracle"
        return np.arange(int(m[3])).reshape(int(m[1]), int(m[2])).tolist()
    m = re.search(r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}", line)
    axes = [(a.split("=")[0].strip("' "), int(a.split("=")[1])) for a in m[1].split(",")]
    chosen = [c.strip("' ") for c in m[2].split(",")]
    ids = np.arange(int(np.prod([s for _, s in axes]))).reshape([s for _, s in axes])
    keep = [k for k, (a, _) in enumerate(axes) if a in chosen]
    rest = [k for k in range(len(axes)) if k not in keep]
    moved = np.transpose(ids, rest + keep)
    return moved.reshape(-1, int(np.prod([axes[k][1] for k in keep]))).tolist()


def figures(compiled, order, slice_of=None):
    """The compiled program's figures; ``order``: the mesh's device ids, ``slice_of``: id ->
    slice_index (several slices: the HLO is one slice's program, device k of slice s is the
    k-th device of ``order`` on slice s)."""
    ma, ca = compiled.memory_analysis(), compiled.cost_analysis()
    text = compiled.as_text()
    slice_of = slice_of or {d: 0 for d in order}
    per_slice = [[d for d in order if slice_of[d] == s] for s in sorted(set(slice_of.values()))]
    found = []
    for line in text.splitlines():
        m = re.search(r"= \S+ (all-reduce|all-gather|reduce-scatter|all-to-all)\(", line)
        if m and "replica_groups=" in line:
            groups = [[o[d] for d in g] for g in groups_of(line) for o in per_slice]
            found.append({"kind": m[1], "groups": groups, "network": network(groups, slice_of)})
        m = re.search(r"\s(collective-permute)(?:-start)?\(.*source_target_pairs=\{(.*?)\}\}", line)
        if m:
            pairs = [[int(d) for d in p.split(",")] for p in re.findall(r"\{([0-9]+,[0-9]+)", m[2])]
            groups = [[o[a], o[b]] for a, b in pairs for o in per_slice]
            found.append({"kind": m[1], "groups": groups, "network": network(groups, slice_of)})
        m = re.search(r" (send|recv)\(", line)
        if m and 'handler_name="xla_megascale_runtime"' in line:
            if t := re.search(r'_xla_megascale_target="\{([0-9,]+)\}x\{([0-9]+):([0-9]+)\}"', line):
                named = [int(s) - 1 for s in t[1].split(",")]
                groups = [[per_slice[s][k] for s in named] for k in range(int(t[2]), int(t[3]) + 1)]
            else:  # device ids: {{a->b},...} (ONE_TO_ONE) or {{a,b,...}} (ALL_TO_ALL)
                t = re.search(
                    r"_xla_megascale_target=\{(\{[0-9,>\-]+\}(?:,\{[0-9,>\-]+\})*)\}", line
                )
                ids = re.findall(r"\{([0-9,>\-]+)\}", t[1])
                groups = [[int(d) for d in re.split(r"->|,", g)] for g in ids]
            found.append({"kind": m[1], "groups": groups, "network": network(groups, slice_of)})
    return {
        "argument_bytes": ma.argument_size_in_bytes,
        "output_bytes": ma.output_size_in_bytes,
        "temp_bytes": ma.temp_size_in_bytes,
        "alias_bytes": ma.alias_size_in_bytes,
        "code_bytes": ma.generated_code_size_in_bytes,
        "flops": ca.get("flops"),
        "bytes_accessed": ca.get("bytes accessed"),
        "optimal_s": ca.get("optimal_seconds"),
        "collectives": found,
    }


def network(groups, slice_of):
    return "DCN" if any(len({slice_of[d] for d in g}) > 1 for g in groups) else "ICI"


def main(argv):
    slices, more = 1, {}
    if "--slices" in argv:
        k = argv.index("--slices")
        slices, argv = int(argv[k + 1]), argv[:k] + argv[k + 2 :]
        more["num_slices"] = slices
    if "--hosts" in argv:  # chips_per_host_bounds, e.g. 2,4,1: one 8-chip host for v5e:2x4
        k = argv.index("--hosts")
        bounds, argv = argv[k + 1], argv[:k] + argv[k + 2 :]
        more["chips_per_host_bounds"] = tuple(int(n) for n in bounds.split(","))
    topo = topologies.get_topology_desc(topology_name=argv[0], platform="tpu", **more)
    slice_of = {int(d.id): int(getattr(d, "slice_index", 0) or 0) for d in topo.devices}
    host_of = {int(d.id): int(d.process_index) for d in topo.devices}
    out = {
        "n_devices": len(topo.devices),
        "hosts": len(set(host_of.values())),
        "slices": len(set(slice_of.values())),
        "host_of": host_of,
    }
    if "--pmap" in argv:
        argv = [a for a in argv if a != "--pmap"]
        made = [
            (name, order, fn.lower(*args).compile)
            for name, order, fn, args in pmap_programs(list(topo.devices), slices)
            if name in argv[1:]
        ]
    else:
        made = sliced_programs(topo.devices, slices) if slices > 1 else programs(topo.devices)
        made = [
            (name, list(mesh.devices.flat), in_mesh(mesh, fn, args))
            for name, mesh, fn, args in made
            if name in argv[1:]
        ]
    for name, order, compile_it in made:
        if name in argv[1:]:
            compiled = compile_it()
            out[name] = figures(compiled, [int(d.id) for d in order], slice_of)
            for c in out[name]["collectives"]:  # groups whose devices sit on several hosts
                c["crossing"] = sum(len({host_of[d] for d in g}) > 1 for g in c["groups"])
    print(json.dumps(out))


def in_mesh(mesh, fn, args):
    """The compile of jit(fn) over ``args`` with ``mesh`` as the context mesh, to run later."""

    def compile_it():
        with jax.set_mesh(mesh):
            return jax.jit(fn).lower(*args).compile()

    return compile_it


if __name__ == "__main__":
    main(sys.argv[1:])
