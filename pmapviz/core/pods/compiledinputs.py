"""What a pod compile really compiled: each argument's global type read from the lowered program,
and every size pmapviz changed on the way (a batch rounded up to divide the chips, clipped to the
largest that fits; a mapped axis re-laid on the slice's devices), with the size asked and why.

The one source of truth for every label of a compile: the report's program label, its batch, the
CLI's lines, the notebook's warnings and ``to_dict()`` are all written from these objects, and
these are read from ``jax.stages.Lowered.in_avals`` (:func:`inputs_of`), never from the settings
that asked for them. Pure data and formatting; no JAX import.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

_SHORT = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64"}
_SHORT |= {"int32": "s32", "int64": "s64", "int8": "s8", "uint8": "u8", "bool": "pred"}


def short_dtype(dtype: object) -> str:
    """'float32' -> 'f32', as HLO and ``jax.typeof`` write it; other names as they are."""
    name = str(dtype)
    return _SHORT.get(name, name)


def type_text(dtype: object, shape: Sequence[int]) -> str:
    """'f32[8192,4096]': the type as JAX prints it."""
    return f"{short_dtype(dtype)}[{','.join(str(int(d)) for d in shape)}]"


class LayoutChanged(UserWarning):
    """pmapviz changed a size or a layout of the program given in order to compile it (the
    notebook's warning; the view's first lines say the same)."""


@dataclass(frozen=True)
class Input:
    """One argument as compiled: its name, dtype and global shape, and how it is laid out."""

    name: str  # 'x', or 'args[1]' where the program names none
    dtype: str  # 'f32'
    shape: tuple[int, ...]
    layout: str  # "split by P('chips')", 'replicated', 'pmap axis 0'
    block: tuple[int, ...] = ()  # what one device holds (pmap: what f sees, the axis removed)

    def text(self) -> str:
        """'x f32[8192,4096]'."""
        return f"{self.name} {type_text(self.dtype, self.shape)}"

    def layout_text(self) -> str:
        """ "x f32[8192,4096] split by P('chips'): f32[512,4096] a device"."""
        said = f"{self.text()} {self.layout}".rstrip()
        if self.block and self.block != self.shape:
            said += f": {type_text(self.dtype, self.block)} a device"
        return said

    def to_dict(self) -> dict:
        """As JSON."""
        return {
            "name": self.name,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "layout": self.layout,
            "block": list(self.block),
        }


@dataclass(frozen=True)
class Change:
    """A size pmapviz changed before compiling: what, as asked, as compiled, and why, with JAX's
    own words where JAX refuses the size as asked."""

    what: str  # 'batch', 'x axis 0'
    asked: int | tuple[int, ...]
    used: int | tuple[int, ...]
    words: str  # 'batch 1,000 rounded up to 1,008 to divide the 16 devices evenly'
    jax_said: str = ""  # JAX's refusal of the size asked, verbatim ('' if JAX was not asked)
    name: str = ""  # the argument ``words`` starts with, as the user named it ('' for a batch)

    def sentence(self, name_as=lambda name: name) -> str:
        """The words as a sentence, the argument's name written by ``name_as`` (a page quotes
        it: it may come from the user's dict keys), and JAX's verdict on the size asked."""
        if self.jax_said:
            asked = f"{self.asked:,}" if isinstance(self.asked, int) else _shape(self.asked)
            said = f" (JAX refuses {asked} as asked: {self.jax_said.split(':')[0]})."
        else:
            said = "."
        if self.name:  # a name is written as it is, never capitalised
            return name_as(self.name) + self.words[len(self.name) :] + said
        return self.words[:1].upper() + self.words[1:] + said

    def to_dict(self) -> dict:
        """As JSON."""
        norm = lambda v: list(v) if isinstance(v, tuple) else v  # noqa: E731
        return {
            "what": self.what,
            "asked": norm(self.asked),
            "used": norm(self.used),
            "words": self.words,
            "jax_said": self.jax_said,
        }


def batch_rounded(asked: int, used: int, devices: int, axis: str, jax_said: str = "") -> Change:
    """The batch rounded up to split evenly over the first mesh axis's ``devices``."""
    return Change(
        "batch",
        asked,
        used,
        f"batch {asked:,} rounded up to {used:,} to divide the {devices} devices of "
        + (f"mesh axes {axis} evenly" if axis.startswith("(") else f"mesh axis {axis!r} evenly"),
        jax_said,
    )


def batch_clipped(asked: int, used: int, refusal: str) -> Change:
    """The batch asked ran out of HBM: shown at the largest batch that compiles."""
    return Change(
        "batch",
        asked,
        used,
        f"batch {asked:,} clipped to {used:,}, the largest batch that fits: the compiler "
        f"refused {asked:,} ({refusal})",
    )


def axis_relaid(
    name: str, axis: int, asked: tuple[int, ...], used: tuple[int, ...], devices: int
) -> Change:
    """A pmap's mapped axis set to the slice's device count (pmap maps one entry a device)."""
    return Change(
        f"{name} axis {axis}",
        asked,
        used,
        f"{name}: axis {axis} re-laid from {asked[axis]:,} to {used[axis]:,} entries, "
        f"{_shape(asked)} -> {_shape(used)}: pmap maps one entry to each device, and the slice "
        f"has {devices}",
        name=name,
    )


def _shape(shape: tuple[int, ...]) -> str:
    return "(" + ", ".join(f"{d:,}" for d in shape) + ("," if len(shape) == 1 else "") + ")"


def inputs_of(
    lowered, names: Sequence[str], layouts: Sequence[str], blocks: Sequence[tuple] = ()
) -> tuple[Input, ...]:
    """Every argument of ``lowered`` (a ``jax.stages.Lowered``), read from its ``in_avals``
    (pytree arguments flattened, in JAX's order), named by ``names`` where given, with its
    layout and one device's block as the caller placed it."""
    avals = [a for arg in lowered.in_avals[0] for a in _leaves(arg)]
    return tuple(
        Input(
            names[k] if k < len(names) else f"args[{k}]",
            short_dtype(a.dtype),
            tuple(int(d) for d in a.shape),
            layouts[k] if k < len(layouts) else "",
            tuple(int(d) for d in blocks[k]) if k < len(blocks) else (),
        )
        for k, a in enumerate(avals)
    )


def _leaves(tree) -> list:
    if isinstance(tree, dict):
        return [leaf for k in sorted(tree) for leaf in _leaves(tree[k])]
    if isinstance(tree, (list, tuple)):
        return [leaf for t in tree for leaf in _leaves(t)]
    return [tree]


def inputs_text(inputs: Sequence[Input]) -> str:
    """'w f32[4096,4096], x f32[8192,4096]'."""
    return ", ".join(i.text() for i in inputs)


def program_text(label: str, inputs: Sequence[Input]) -> str:
    """The program as compiled: 'data-parallel step: w f32[4096,4096], x f32[8192,4096]'."""
    return f"{label}: {inputs_text(inputs)}" if inputs else label
