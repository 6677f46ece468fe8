"""A scenario: what the explorer's settings describe, in one type.

A function from the catalog, each argument's shape, dtype and ``in_axes``, ``out_axes`` and the
``axis_name`` -- all kept as the user typed them, so they travel through widgets and links
unchanged. One type owns the format (``fn``, ``s0``.., ``d0``.., ``a0``.., ``out``, ``name``):

* ``Scenario.defaults(fn, n)`` / ``Scenario.from_texts(...)`` build one;
* ``.query()`` is its URL state, ``.url(page)`` a link, ``.key`` a stable cache key;
* ``.plan(n)`` parses it through :mod:`pmapviz.settings` and runs :func:`pmapviz.planning.plan`.

Every page, preset, tour link and the CLI go through it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlencode

from pmapviz import catalog

MAX_ARGS = catalog.MAX_ARGS
KEYS = ("fn", "out", "name", *(f"{c}{k}" for k in range(MAX_ARGS) for c in "sda"))


def shape_text(shape: tuple[int, ...]) -> str:
    return ", ".join(f"{d:_}" for d in shape) if shape else "()"


def axis_text(axis: int | None) -> str:
    return "None" if axis is None else str(axis)


@dataclass(frozen=True)
class Scenario:
    fn: str
    shapes: tuple[str, ...]  # one per argument slot (MAX_ARGS), as typed
    dtypes: tuple[str, ...]
    in_axes: tuple[str, ...]
    out: str = "0"
    name: str = ""

    # ------------------------------------------------------------ building one
    @classmethod
    def defaults(cls, fn: str, n_devices: int) -> Scenario:
        """A function's own example, with its mapped axes sized to ``n_devices``."""
        p = catalog.get(fn)
        shapes, axes = [], []
        for k in range(MAX_ARGS):
            shape = p.default_shapes[k] if k < p.n_args else (n_devices, 4)
            ax = p.default_in_axes[k] if k < p.n_args else 0
            if ax is not None:
                shape = shape[:ax] + (n_devices,) + shape[ax + 1 :]
            shapes.append(shape_text(shape))
            axes.append(axis_text(ax))
        return cls(fn, tuple(shapes), ("float32",) * MAX_ARGS, tuple(axes),
                   axis_text(p.default_out_axes), "i" if p.needs_axis_name else "")  # fmt: skip

    @classmethod
    def from_texts(cls, texts: Mapping[str, str], n_devices: int) -> Scenario:
        """From text keyed like the URL (missing keys: the function's defaults)."""
        fn = texts.get("fn", "batched_dot")
        base = cls.defaults(fn if fn in catalog.BY_KEY else "batched_dot", n_devices)
        merged = {**base.texts(every_slot=True), **{k: str(v) for k, v in texts.items()
                                                    if k in KEYS}}  # fmt: skip
        return cls(
            merged["fn"],
            tuple(merged[f"s{k}"] for k in range(MAX_ARGS)),
            tuple(merged[f"d{k}"] for k in range(MAX_ARGS)),
            tuple(merged[f"a{k}"] for k in range(MAX_ARGS)),
            merged["out"], merged["name"],
        )  # fmt: skip

    def with_changes(self, changes: Mapping[str, str], n_devices: int) -> Scenario:
        return Scenario.from_texts({**self.texts(every_slot=True), **changes}, n_devices)

    # ------------------------------------------------------------ where it goes
    @property
    def n_args(self) -> int:
        return catalog.get(self.fn).n_args if self.fn in catalog.BY_KEY else MAX_ARGS

    def texts(self, every_slot: bool = False) -> dict[str, str]:
        """The URL state: fn, out, name and the used argument slots (all slots if asked)."""
        out = {"fn": self.fn, "out": self.out, "name": self.name}
        for k in range(MAX_ARGS if every_slot else self.n_args):
            out[f"s{k}"] = self.shapes[k]
            out[f"d{k}"] = self.dtypes[k]
            out[f"a{k}"] = self.in_axes[k]
        return out

    def query(self) -> dict[str, str]:
        return self.texts()

    def url(self, page: str = "explorer") -> str:
        return f"/{page}?{urlencode(self.query())}"

    @property
    def key(self) -> str:
        """A stable key for caches: the canonical query string."""
        return urlencode(sorted(self.query().items()))

    # ------------------------------------------------------------ planning it
    def plan(self, n_devices: int):
        """``(program, plan or None, errors)``: errors are messages about text that is not a
        function, shape, dtype, axis or name (the plan is None then); otherwise the planner's
        verdict on these settings."""
        from pmapviz import planning, settings

        if self.fn not in catalog.BY_KEY:
            return None, None, [f"Unknown function {settings.quote(self.fn)}: choose one from "
                                "the catalog."]  # fmt: skip
        program = catalog.get(self.fn)
        errors: list[str] = []

        def attempt(parse, *args):
            try:
                return parse(*args)
            except settings.SettingError as err:
                errors.append(str(err))
                return None

        shapes, axes, dtypes = [], [], []
        for k, arg in enumerate(program.arg_names):
            shapes.append(attempt(settings.parse_shape, self.shapes[k], f"shape of {arg}"))
            axes.append(attempt(settings.parse_axis, self.in_axes[k], f"in_axes of {arg}"))
            dtypes.append(attempt(settings.parse_choice, self.dtypes[k], f"dtype of {arg}",
                                  settings.DTYPES))  # fmt: skip
        out_axes = attempt(settings.parse_axis, self.out, "out_axes")
        axis_name = attempt(settings.parse_axis_name, self.name)
        if errors:
            return program, None, errors
        p = planning.plan(program, shapes, in_axes=tuple(axes), out_axes=out_axes,
                          axis_name=axis_name, n_devices=n_devices, dtypes=dtypes)  # fmt: skip
        return program, p, []
