"""The programs pmapviz knows, by name or from the Types page's settings, as
:class:`pmapviz.features.types.typedsources.TypedSource`: the Meshes page's f on its mesh,
an explorer function (or your own f) as pmap maps it, the data-parallel training step and the
seed's 10M-pair dot. Settings that cannot make a program give one message each, with a fix,
in the user's shapes and numbers (:class:`Refused`).
"""

from __future__ import annotations

from pmapviz.core.base.valuetext import quote
from pmapviz.core.expressions import exprvocab, functions
from pmapviz.core.planning.scenarios import Scenario
from pmapviz.core.running import programanalysis
from pmapviz.core.running.programanalysis import Target
from pmapviz.features.live import dotproduct
from pmapviz.features.meshes import meshspecs
from pmapviz.features.meshes.meshownf import MeshF
from pmapviz.features.training import traininganalysis
from pmapviz.features.training.trainingmodel import Config
from pmapviz.features.types import typedsources, typesettings
from pmapviz.features.types.typedsources import TypedSource

NAMES = (*functions.BY_KEY, "meshes", "training", "seed")


class Refused(ValueError):
    """Settings that make no program: one message per problem, each with its fix."""

    def __init__(self, messages: list[str]):
        super().__init__(" ".join(messages))
        self.messages = messages


def named(name: str, n_devices: int) -> TypedSource:
    """A program by name: an explorer function's key, 'meshes', 'training' or 'seed', at its
    defaults for ``n_devices``."""
    if name not in NAMES:
        raise Refused(
            [f"{quote(name)} is no program pmapviz knows: choose from {', '.join(NAMES)}."]
        )
    texts = typesettings.schema(n_devices).defaults()
    if name in functions.BY_KEY:
        texts |= Scenario.defaults(name, n_devices).texts(every_slot=True)
        name = "explorer"
    values, errors = typesettings.schema(n_devices).parse(texts)
    if errors:  # the defaults always parse; a message rather than a crash if one did not
        raise Refused(errors)
    return from_values({**values, "prog": name}, texts, n_devices)


def from_values(values: dict, texts: dict, n_devices: int) -> TypedSource:
    """The program the page's settings describe (``values`` parsed, ``texts`` as typed),
    on this server's ``n_devices``; raises :class:`Refused`."""
    prog = values["prog"]
    if prog == "explorer":
        return explorer(
            Scenario.from_texts(typesettings.explorer_texts(texts, n_devices), n_devices), n_devices
        )
    if prog == "training":
        return training(values["model"], values["batch"], values["red"], n_devices)
    if prog == "seed":
        return seed(n_devices)
    return meshes(values, n_devices)


def explorer(scenario: Scenario, n_devices: int) -> TypedSource:
    """The explorer's settings as pmap maps them, on a one-axis mesh of the devices it uses."""
    program, plan, errors = scenario.plan(n_devices)
    if errors:
        raise Refused(errors)
    if not plan.ok:
        raise Refused([f"{p.message} Fix: {p.fix}" for p in plan.problems])
    target = programanalysis.plan_target(program, plan)
    return typedsources.from_target(target, ("explorer", scenario.key, n_devices))


def training(model: str, batch: int, reduction: str, n_devices: int) -> TypedSource:
    """One data-parallel training step of ``model`` on every device."""
    if batch % n_devices or batch < n_devices:
        low = max(n_devices, batch - batch % n_devices)
        raise Refused(
            [
                f"A global batch of {batch:,} does not split evenly over {n_devices} devices. "
                f"Fix: use {low:,} or {low + n_devices:,}."
            ]
        )
    cfg = Config(model=model, devices=n_devices, batch=batch, reduction=reduction)
    target = traininganalysis.training_target(cfg)
    return typedsources.from_target(target, ("training", model, batch, reduction, n_devices))


def seed(n_devices: int) -> TypedSource:
    """The seed's dot: 10,000,000 pairs of 3-vectors (rounded down to split evenly over the
    devices), reshaped to (n, pairs // n, 3), ``jax.pmap(jax.vmap(jnp.dot))``."""
    import jax
    import jax.numpy as jnp

    pairs = dotproduct.DEFAULT_PAIRS // n_devices * n_devices
    block = jax.ShapeDtypeStruct((n_devices, pairs // n_devices, 3), jnp.float32)
    target = Target(
        f"the seed's dot of {pairs:,} pairs",
        "jax.pmap(jax.vmap(jnp.dot))",
        jax.vmap(jnp.dot),
        (block, block),
        (0, 0),
        0,
        None,
        n_devices,
    )
    return typedsources.from_target(target, ("seed", n_devices))


def meshes(values: dict, n_devices: int) -> TypedSource:
    """The Meshes page's f on its mesh, from the page's (renamed) settings."""
    sizes = values["mesh"]
    names = meshspecs.parse_axis_names(values["names"], len(sizes))
    mesh = meshspecs.Mesh(sizes, names)
    if mesh.devices > n_devices:
        raise Refused(
            [
                f"The mesh {mesh.text()} has {mesh.devices} devices and this server "
                f"{n_devices}. Fix: make the mesh's axis sizes multiply to {n_devices} or less."
            ]
        )
    args = [
        (f"argument {k + 1}", values[f"ms{k}"], values[f"p{k}"])
        for k in range(3)
        if values.get(f"ms{k}") is not None
    ]
    problems = [
        f"{label}: {p.message} Fix: {p.fix}"
        for label, shape, spec in args
        for p in meshspecs.problems(mesh, shape, spec, label)
    ]
    f = MeshF(values["margs"], values["gf"], values["lf"], values["mout"])
    try:
        g, _ = f.programs()
    except exprvocab.ExprError as err:
        problems.append(f"{err} Fix: edit that expression.")
    else:
        if len(g.arg_names) != len(args):
            problems.append(
                f"f takes {len(g.arg_names)} argument(s) and {len(args)} shape(s) are given. "
                f"Fix: name one argument per shape."
            )
    if problems:
        raise Refused(problems)
    return typedsources.from_mesh_f(mesh, args, f)
