"""Your f on a named mesh, laid on a TPU slice: the Meshes page's global view (``jax.jit`` over
``NamedSharding``) as a program :mod:`pmapviz.core.pods` compiles for a pod.

The mesh keeps its axes and sizes; it must have as many devices as the slice (else one line
says which slice, or which mesh, would). ``mesh_utils.create_device_mesh`` lays its axes on the
chips, as ``jax.make_mesh`` does on a real slice.
"""

from __future__ import annotations

import hashlib

from pmapviz.core.expressions import expr
from pmapviz.core.pods import podprograms, tpuchips
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.features.meshes.meshspecs import Entry, Mesh, spec_text


def fit_problem(mesh: Mesh, topology: str) -> str | None:
    """Why ``mesh`` cannot be laid on ``topology`` (a fix in the same line), or None."""
    topo = tpuchips.parse_topology(topology)
    devices = topo.chips * (2 if topo.generation.name == "v4" else 1)
    if mesh.devices == devices:
        return None
    same = [
        t
        for t in tpuchips.OFFERED
        if tpuchips.parse_topology(t).chips * (2 if t.startswith("v4:") else 1) == mesh.devices
    ]
    pick = f"pick {' or '.join(same[:3])}" if same else "no offered slice has that many"
    return (
        f"The mesh {mesh.text()} has {mesh.devices} devices and {topology} has {devices}: "
        f"{pick}, or make the mesh's sizes multiply to {devices}."
    )


def pod_program(
    mesh: Mesh,
    shapes: list[tuple[int, ...]],
    specs: list[tuple[Entry, ...]],
    arg_names: str,
    body: str,
    dtype: str = "float32",
) -> PodProgram:
    """``jax.jit(f)`` with f the expression ``body`` over ``arg_names``, each argument of the
    given global shape split by its spec over the mesh's axes (raises ExprError)."""
    program = expr.program(arg_names, body)
    fn = program.build(None)
    digest = hashlib.sha1(repr((mesh, shapes, specs, arg_names, body, dtype)).encode()).hexdigest()[
        :12
    ]
    inputs = [(tuple(s), dtype, tuple(p)) for s, p in zip(shapes, specs, strict=True)]
    specs_text = ", ".join(spec_text(p) for p in specs)
    code = (
        f"mesh = jax.make_mesh({mesh.shape}, {mesh.names})\n"
        f"f = jax.jit(lambda {arg_names}: {body})   # inputs split by {specs_text}"
    )
    return podprograms.on_mesh(
        f"f:{digest}",
        f"your f on the mesh {mesh.text()}: {body}",
        code,
        fn,
        lambda _b: inputs,
        axes=tuple(zip(mesh.names, mesh.shape, strict=True)),
        names=tuple(program.arg_names),
    )
