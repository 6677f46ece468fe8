"""The Types page's URL state: which program (``prog``), which modes are open (``mode``), and
each program's own settings, read through the same fields as the page it comes from:

* ``prog=meshes`` (the default): the Meshes page's f on its mesh: ``mesh``, ``names``,
  ``p0``.. and ``gf``/``lf`` under their Meshes keys; the keys the explorer also uses carry an
  ``m``: ``ms0``.. (shapes), ``margs`` (f's arguments), ``mout`` (out_specs);
* ``prog=explorer``: the explorer's settings, under its own keys (``fn``, ``args``, ``body``,
  ``out``, ``name``, ``s0``.., ``d0``.., ``a0``..), so an explorer link opens here as it is;
* ``prog=training``: ``model``, ``batch`` and ``red`` as on the Training page;
* ``prog=seed``: the seed's 10M-pair dot, nothing to set.

Every value goes through :mod:`pmapviz.core.base.settings`: a link's bad value is replaced by
its default with one note.
"""

from __future__ import annotations

import functools
from dataclasses import replace

from pmapviz.core.base import settings, valueparse
from pmapviz.core.base.valuetext import quote
from pmapviz.core.planning import scenarios
from pmapviz.features.meshes import meshsettings
from pmapviz.features.training import trainingmodel
from pmapviz.features.types.typedmodes import MODES, TITLES

PROGRAMS = {
    "meshes": "The Meshes page's f on its mesh",
    "explorer": "An explorer function, as pmap maps it",
    "training": "The data-parallel training step",
    "seed": "The seed's 10M-pair dot",
}
DEFAULT_MODES = ("explicit",)
MESH_USED = ("mesh", "names", "s0", "p0", "s1", "p1", "s2", "p2", "args", "gf", "lf", "out")
MESH_KEYS = {"s0": "ms0", "s1": "ms1", "s2": "ms2", "args": "margs", "out": "mout"}
TRAINING_KEYS = ("model", "batch", "red")


def parse_modes(text, name: str = "modes") -> list[str]:
    """'explicit' or 'auto, explicit, manual' (or the list a multiselect holds) -> the modes,
    in the order of :data:`MODES`: at least one, each once."""
    if isinstance(text, list | tuple):
        parts = [str(p).strip().lower() for p in text]
    else:
        raw = str(text if text is not None else "").strip()
        if len(raw) > 60:
            raise valueparse.SettingError(f"{name} is {len(raw):,} characters long; at most 60.")
        parts = [p.strip().lower() for p in raw.split(",") if p.strip()]
    bad = [p for p in parts if p not in MODES]
    if bad:
        raise valueparse.SettingError(
            f"{name}: {quote(bad[0])} is not a mode; choose from {', '.join(MODES)}."
        )
    if not parts:
        raise valueparse.SettingError(f"{name} is empty: open at least one of {', '.join(MODES)}.")
    return [m for m in MODES if m in parts]


def modes_text(value) -> str:
    """The modes back to their link's text: 'auto,explicit' (text as it is: a link keeps
    what was typed, and the page says what is wrong with it)."""
    if isinstance(value, str):
        return value
    return ",".join(m for m in MODES if m in value)


def mode_label(mode: str) -> str:
    """What the mode picker shows."""
    return TITLES.get(mode, mode)


def _mesh_fields(n_devices: int) -> tuple[list[settings.Field], tuple[settings.Joint, ...]]:
    """The Meshes page's fields of its mesh and f (not its axis types: each mode sets them;
    not its TPU slice), the explorer's keys among them renamed."""
    meshes = meshsettings.schema(n_devices)
    fields = [
        replace(f, key=MESH_KEYS[f.key], label=f"the Meshes f's {f.label}")
        if f.key in MESH_KEYS
        else f
        for f in meshes.fields
        if f.key in MESH_USED
    ]
    return fields, meshes.joints


def _explorer_fields(n_devices: int) -> tuple[list[settings.Field], tuple[settings.Joint, ...]]:
    explorer = scenarios.schema(n_devices)
    return [f for f in explorer.fields if f.key != "pn"], explorer.joints


def _training_fields(n_devices: int) -> list[settings.Field]:
    training = trainingmodel.schema(n_devices)
    return [training.field(k) for k in TRAINING_KEYS]


@functools.lru_cache(maxsize=32)
def schema(n_devices: int) -> settings.Schema:
    """The Types page: prog, mode, then the Meshes page's, the explorer's and the Training
    page's fields (see the module's docstring)."""
    s = settings
    mesh_fields, mesh_joints = _mesh_fields(n_devices)
    explorer_fields, explorer_joints = _explorer_fields(n_devices)
    fields = [
        s.choice_field("prog", "Program", tuple(PROGRAMS), "meshes"),
        s.Field(
            "mode",
            "Modes",
            ",".join(DEFAULT_MODES),
            parse_modes,
            max_len=60,
            show=modes_text,
        ),
        *mesh_fields,
        *explorer_fields,
        *_training_fields(n_devices),
    ]
    return s.Schema(tuple(fields), (*mesh_joints, *explorer_joints))


def explorer_texts(texts: dict, n_devices: int) -> dict[str, str]:
    """The explorer's settings among the page's texts (its own keys). For another function
    than the default's, a text still at the default (batched_dot's shapes) is left out, so
    the function's own example fills it, as the explorer's links do."""
    mine = {k: str(v) for k, v in texts.items() if k in scenarios.KEYS}
    defaults = scenarios.schema(n_devices).defaults()
    if mine.get("fn", defaults["fn"]) == defaults["fn"]:
        return mine
    return {k: v for k, v in mine.items() if k == "fn" or v != defaults.get(k)}


def mesh_texts(texts: dict) -> dict[str, str]:
    """The Meshes page's settings among the page's texts, under the Meshes page's keys."""
    back = {v: k for k, v in MESH_KEYS.items()}
    return {back.get(k, k): v for k, v in texts.items()}
