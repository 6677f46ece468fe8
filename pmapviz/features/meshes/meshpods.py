"""Your f on a named mesh, laid on a TPU slice: the Meshes page's global view (``jax.jit`` over
``NamedSharding``) as a program :mod:`pmapviz.core.pods` compiles for a pod.

The mesh keeps its axes and sizes; it must have as many devices as the slice (else one line
says which slice, or which mesh, would). ``mesh_utils.create_device_mesh`` lays its axes on the
chips, as ``jax.make_mesh`` does on a real slice.

On several slices (``2 x v5e:4x4``) the mesh is one slice's: the compile prepends an axis
``'dcn'`` of the slice count, outermost (``mesh_utils.create_hybrid_device_mesh``, as the
built-in programs are laid: :func:`pmapviz.core.pods.podprograms.laid_out`), and every dimension
split over the mesh's first axis (the data axis) is split over ``('dcn', <first>)``: data
parallelism across slices. The compile's note says so, written from the mesh compiled.
"""

from __future__ import annotations

import hashlib
import math

from pmapviz.core.expressions import expr
from pmapviz.core.pods import podprograms, tpuchips
from pmapviz.core.pods.podprograms import DCN, PodProgram
from pmapviz.features.meshes.meshspecs import Entry, Mesh, axes_of, spec_text


def fit_problem(mesh: Mesh, topology: str) -> str | None:
    """Why ``mesh`` cannot be laid on ``topology`` (a fix in the same line), or None. On
    several slices the mesh is one slice's (the compile adds the ``'dcn'`` axis)."""
    topo = tpuchips.parse_topology(topology, multislice=True)
    devices = topo.chips * (2 if topo.generation.name == "v4" else 1)
    if topo.slices > 1 and DCN in mesh.names:
        return (
            f"The mesh {mesh.text()} names an axis {DCN!r}, the axis the compile adds across "
            f"{topo.slices} slices: rename yours (e.g. 'data'), or pick one slice."
        )
    if mesh.devices == devices:
        return None
    if topo.slices > 1:
        return (
            f"The mesh {mesh.text()} has {mesh.devices} devices and one slice of {topology} has "
            f"{devices}: on {topo.slices} slices the mesh is one slice's (the compile adds "
            f"{DCN!r} = {topo.slices} outermost); make its sizes multiply to {devices}."
        )
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


def dcn_problem(
    mesh: Mesh, shapes: list[tuple[int, ...]], specs: list[tuple[Entry, ...]], topology: str
) -> str | None:
    """On several slices, a dimension split over the mesh's first axis is split over
    ``('dcn', <first>)`` too: why one does not divide (a fix in the same line), or None."""
    slices = tpuchips.parse_topology(topology, multislice=True).slices
    if slices == 1:
        return None
    first = mesh.names[0]
    for k, (shape, spec) in enumerate(zip(shapes, specs, strict=True)):
        for dim, (size, entry) in enumerate(zip(shape, spec, strict=False)):
            named = axes_of(entry)
            if first not in named:
                continue
            ways = slices * math.prod(mesh.size[a] for a in named)
            if size % ways:
                return (
                    f"argument {k + 1}'s dimension {dim} ({size}) is split over {first!r} and, "
                    f"on {slices} slices, over {DCN!r} too: {ways} ways, which does not divide "
                    f"{size}. Make it a multiple of {ways}, or pick one slice."
                )
    return None


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
