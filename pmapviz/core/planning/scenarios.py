"""A scenario: what the explorer's settings describe, in one type.

A function from the catalog or the user's own expression, each argument's shape, dtype and
``in_axes``, ``out_axes``, the ``axis_name`` and the device count to plan for -- all kept as
the user typed them, so they travel through widgets and links unchanged. One type owns the
format (``fn``, ``args``, ``body``, ``s0``.., ``d0``.., ``a0``.., ``out``, ``name``, ``pn``):

* ``fn="expr"`` is "your own f": ``args`` names the arguments (``x, w``) and ``body`` is the
  expression (checked and interpreted by :mod:`pmapviz.core.expressions.expr`, never run as Python);
* ``pn`` is "plan for N devices" (empty: this server's count); only the explorer uses it;
* ``Scenario.defaults(fn, n)`` / ``Scenario.from_texts(...)`` build one;
* ``.query()`` is its URL state, ``.url(page)`` a link, ``.key`` a stable cache key;
* ``.plan(n)`` parses it through :mod:`pmapviz.core.base.settings` and runs
:func:`pmapviz.core.planning.planning.plan`.

Each attribute of :class:`Scenario` is one URL field (:class:`UrlField`: its key, label and
settings field), from which the keys, the link's codec and the explorer's schema follow:
adding a field is one attribute here (then its widget, and whatever uses it).

Every page, preset, tour link and the CLI go through it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import MISSING, dataclass, field, fields, replace
from urllib.parse import urlencode

from pmapviz.core.base import pytrees, settings, valueparse, valuetext
from pmapviz.core.expressions import expr, exprvocab, functions
from pmapviz.core.planning import planning

EXPR = "expr"  # fn value for "your own f"
EXPR_LABEL = "Your own f: type an expression"
FUNCTIONS = (*functions.BY_KEY, EXPR)
MAX_ARGS = expr.MAX_ARGS
MAX_PLAN_DEVICES = 4096
EXPR_DEFAULT = ("x, w", "jnp.tanh(x @ w)")  # the first example of your own f


def shape_text(shape: tuple[int, ...]) -> str:
    """A shape as typed in its box: (10000000, 3) -> '10_000_000, 3'; () -> '()'."""
    return ", ".join(f"{d:_}" for d in shape) if shape else "()"


def axis_text(axis: int | None) -> str:
    """An in_axes entry as typed in its box: None -> 'None', 1 -> '1'."""
    return "None" if axis is None else str(axis)


def label(fn: str) -> str:
    """What the function choice shows for ``fn``."""
    return EXPR_LABEL if fn == EXPR else functions.get(fn).label


def program_for(fn: str, args: str = "", body: str = "") -> functions.Program:
    """The catalog entry ``fn``, or for ``fn="expr"`` the checked expression (raises
    :class:`pmapviz.core.expressions.exprvocab.ExprError`, a SettingError, naming the column)."""
    if fn == EXPR:
        return expr.program(args, body)
    return functions.get(fn)


def program_ref(program: functions.Program) -> tuple[str, str, str]:
    """``(fn, args, body)`` that rebuild ``program`` with :func:`program_for` (cache keys)."""
    if isinstance(program, expr.ExprProgram):
        return EXPR, ", ".join(program.arg_names), program.source
    return program.key, "", ""


def has_numpy_version(program: functions.Program) -> bool:
    """Catalog functions mostly have one (for checking results); your own f never does."""
    return functions.numpy_fn(program.key) is not None


def parse_plan_devices(text: str, n_devices: int) -> int:
    """'' -> this server's ``n_devices``; else a whole number from 1 to MAX_PLAN_DEVICES."""
    if not str(text).strip():
        return n_devices
    return valueparse.parse_int(text, "Plan for N devices", 1, MAX_PLAN_DEVICES)


# ---------------------------------------------------------------- the explorer's URL fields
@dataclass(frozen=True)
class UrlField:
    """How one :class:`Scenario` attribute travels in a link: its URL key (for a slot, the
    letter before each argument's number: ``s`` gives s0, s1, ...), its label, ``make(key,
    label, default)`` its ``settings.Field`` in the explorer's schema, and ``carried(scenario)``
    whether a link carries it (None: always; every key is carried with ``every_slot``)."""

    key: str
    label: str
    make: Callable[[str, str, str], settings.Field]
    slot: bool = False
    carried: Callable[[Scenario], bool] | None = None


def _url(key, label, make, default=MISSING, *, slot=False, carried=None):
    """A Scenario attribute that is one URL field (``default``: the attribute's own)."""
    return field(default=default, metadata={"url": UrlField(key, label, make, slot, carried)})


def _check_args(text: str, name: str) -> None:
    expr.parse_arg_names(text)


def _check_expression(texts: Mapping[str, str]) -> None:
    expr.program(texts["args"], texts["body"])


def _axis_name(text: str, name: str) -> str | None:
    return valueparse.parse_axis_name(text)


def _check_pn(text: str, name: str) -> None:
    if text.strip():
        valueparse.parse_int(text, name, 1, MAX_PLAN_DEVICES)


def _own_f(s: Scenario) -> bool:
    return s.fn == EXPR


def _plans_for_n(s: Scenario) -> bool:
    return bool(s.pn.strip())


TREE = {"typed": True, "show": valuetext.fmt_tree}  # a field whose value is a shape or axis tree
_text = settings.text_field


@dataclass(frozen=True, kw_only=True)
class Scenario:
    """The explorer's settings as typed: the function, out_axes, axis_name, the device count
    to plan for, and each argument slot's shape, dtype and in_axes. Each attribute is one URL
    field (:class:`UrlField`), in URL order, the slots last: the keys (:data:`KEYS`), the link
    (:meth:`texts`, :meth:`from_texts`) and the schema (:func:`schema`) all come from here."""

    fn: str = _url("fn", "Function", lambda k, lab, d: settings.choice_field(k, lab, FUNCTIONS, d))
    args: str = _url(  # your own f: argument names, as typed
        "args",
        "Arguments of f",
        lambda k, lab, d: _text(k, lab, d, _check_args),
        EXPR_DEFAULT[0],
        carried=_own_f,
    )
    body: str = _url(  # your own f: the expression, as typed
        "body",
        "Body of f",
        lambda k, lab, d: _text(k, lab, d, max_len=expr.MAX_TEXT),
        EXPR_DEFAULT[1],
        carried=_own_f,
    )
    out: str = _url(
        "out", "out_axes", lambda k, lab, d: _text(k, lab, d, pytrees.parse_axis_tree, **TREE), "0"
    )
    name: str = _url(
        "name",
        "axis_name",
        lambda k, lab, d: _text(k, lab, d, _axis_name, typed=True, show=lambda v: v or ""),
        "",
    )
    pn: str = _url(  # plan for N devices; empty: this server's count
        "pn",
        "Plan for N devices",
        lambda k, lab, d: _text(k, lab, d, _check_pn),
        "",
        carried=_plans_for_n,
    )
    shapes: tuple[str, ...] = _url(  # one per argument slot (MAX_ARGS), as typed
        "s",
        "shape",
        lambda k, lab, d: _text(k, lab, d, pytrees.parse_shape_tree, **TREE),
        slot=True,
    )
    dtypes: tuple[str, ...] = _url(
        "d",
        "dtype",
        lambda k, lab, d: settings.choice_field(k, lab, settings.DTYPES, d),
        slot=True,
    )
    in_axes: tuple[str, ...] = _url(
        "a",
        "in_axes",
        lambda k, lab, d: _text(k, lab, d, pytrees.parse_axis_tree, **TREE),
        slot=True,
    )

    # ------------------------------------------------------------ building one
    @classmethod
    @functools.lru_cache(maxsize=512)  # noqa: B019  (immutable: every rerun shares one)
    def defaults(cls, fn: str, n_devices: int) -> Scenario:
        """A function's own example, with its mapped axes sized to ``n_devices``."""
        p = (
            expr.program(*EXPR_DEFAULT, ((8, 4, 5), (5, 2)), (0, None))
            if fn == EXPR
            else functions.get(fn)
        )
        sized = functions.sized_shapes(p, n_devices)
        shapes = [shape_text(sized[k] if k < p.n_args else (n_devices, 4)) for k in range(MAX_ARGS)]
        axes = [axis_text(p.default_in_axes[k] if k < p.n_args else 0) for k in range(MAX_ARGS)]
        return cls(
            fn=fn,
            shapes=tuple(shapes),
            dtypes=("float32",) * MAX_ARGS,
            in_axes=tuple(axes),
            out=axis_text(p.default_out_axes),
            name="i" if p.needs_axis_name else "",
        )

    @classmethod
    def from_texts(cls, texts: Mapping[str, str], n_devices: int) -> Scenario:
        """From text keyed like the URL (missing keys: the function's defaults)."""
        fn = texts.get("fn", "batched_dot")
        base = cls.defaults(fn if fn in FUNCTIONS else "batched_dot", n_devices)
        merged = {
            **base.texts(every_slot=True),
            **{k: str(v) for k, v in texts.items() if k in KEYS},
        }
        return cls(
            **{a: merged[u.key] for a, u in SCALARS},
            **{a: tuple(merged[f"{u.key}{k}"] for k in range(MAX_ARGS)) for a, u in SLOTS},
        )

    def with_changes(self, changes: Mapping[str, str], n_devices: int) -> Scenario:
        """These settings with ``changes`` (text keyed like the URL) applied."""
        return Scenario.from_texts({**self.texts(every_slot=True), **changes}, n_devices)

    def as_expression(self) -> Scenario:
        """The same settings as "your own f", starting from this catalog function's code."""
        if self.fn not in functions.BY_KEY:
            return replace(self, fn=EXPR)
        p = functions.get(self.fn)
        return replace(
            self, fn=EXPR, args=", ".join(p.arg_names), body=p.body(self.name.strip() or "i")
        )

    def switched(self, fn: str, n_devices: int) -> Scenario:
        """The settings after choosing ``fn``: your own f starts from the current function's
        code and shapes; a catalog function loads its example, sized to the planned count."""
        if fn == EXPR:
            return self.as_expression()
        count = self.plans_elsewhere(n_devices) or n_devices
        return replace(Scenario.defaults(fn, count), pn=self.pn)

    def resized(self, new_pn: str, n_devices: int) -> Scenario:
        """``pn`` set to ``new_pn``; each mapped axis whose size was the old device count is
        resized to the new one (text that does not parse is left as it is)."""
        try:
            old, new = (parse_plan_devices(t, n_devices) for t in (self.pn, new_pn))
        except valueparse.SettingError:
            return replace(self, pn=new_pn)
        shapes = list(self.shapes)
        for k in range(self.n_args):
            try:
                shape = list(valueparse.parse_shape(self.shapes[k]))
                ax = valueparse.parse_axis(self.in_axes[k])
            except valueparse.SettingError:
                continue
            if ax is not None and 0 <= ax < len(shape) and shape[ax] == old:
                shape[ax] = new
                shapes[k] = shape_text(tuple(shape))
        return replace(self, shapes=tuple(shapes), pn=new_pn)

    # ------------------------------------------------------------ where it goes
    @property
    def arg_names(self) -> tuple[str, ...]:
        """The arguments' names (your own f: as typed, or none while they do not parse)."""
        if self.fn == EXPR:
            try:
                return expr.parse_arg_names(self.args)
            except exprvocab.ExprError:
                return ()
        return functions.get(self.fn).arg_names if self.fn in functions.BY_KEY else ()

    @property
    def n_args(self) -> int:
        """How many argument slots are in use (every slot while the names do not parse)."""
        return len(self.arg_names) or MAX_ARGS

    def texts(self, every_slot: bool = False) -> dict[str, str]:
        """The URL state: fn (args and body for your own f), out, name, pn if set, and the
        used argument slots; every key and slot if asked."""
        out = {
            u.key: getattr(self, a)
            for a, u in SCALARS
            if every_slot or u.carried is None or u.carried(self)
        }
        for k in range(MAX_ARGS if every_slot else self.n_args):
            out |= {f"{u.key}{k}": getattr(self, a)[k] for a, u in SLOTS}
        return out

    def query(self) -> dict[str, str]:
        """The URL query, through the explorer's schema (the one codec)."""
        return schema(1).to_query(self.texts())

    def url(self, page: str = "explorer") -> str:
        """A link to ``page`` that opens these settings."""
        return f"/{page}?{urlencode(self.query())}"

    @property
    def key(self) -> str:
        """A stable key for caches: the canonical query string."""
        return urlencode(sorted(self.query().items()))

    def plans_elsewhere(self, n_devices: int) -> int | None:
        """The device count the explorer plans for, when it is not this server's."""
        try:
            pn = parse_plan_devices(self.pn, n_devices)
        except valueparse.SettingError:
            return None
        return None if pn == n_devices else pn

    # ------------------------------------------------------------ planning it
    def plan(self, n_devices: int, use_pn: bool = False):
        """``(program, plan or None, errors)`` for ``n_devices`` (with ``use_pn``: for the
        "plan for N devices" setting, default ``n_devices``). Errors are messages about text
        that is not a function, expression, shape, dtype, axis or name (the plan is None
        then); otherwise the planner's verdict on these settings."""
        errors: list[str] = []

        def attempt(parse, *args):
            try:
                return parse(*args)
            except valueparse.SettingError as err:
                errors.append(str(err))
                return None

        if self.fn not in FUNCTIONS:
            return (
                None,
                None,
                [f"Unknown function {valuetext.quote(self.fn)}: choose one from the catalog."],
            )
        try:
            program = program_for(self.fn, self.args, self.body)
        except exprvocab.ExprError as err:
            return None, None, [f"Your own f: {err}"]
        n = attempt(parse_plan_devices, self.pn, n_devices) if use_pn else n_devices
        names = program.arg_names
        v, bad = inputs(
            self.texts(every_slot=True),
            len(names),
            len(names),
            len(names),
            {
                **{f"s{k}": f"shape of {a}" for k, a in enumerate(names)},
                **{f"a{k}": f"in_axes of {a}" for k, a in enumerate(names)},
                **{f"d{k}": f"dtype of {a}" for k, a in enumerate(names)},
            },
        )
        errors += bad
        if errors:
            return program, None, errors
        p = planning.plan(
            program,
            v["shapes"],
            in_axes=v["in_axes"],
            out_axes=v["out_axes"],
            axis_name=v["axis_name"],
            n_devices=n,
            dtypes=v["dtypes"],
        )
        return program, p, []


# ---------------------------------------------------------------- the explorer's URL state
_FIELDS = tuple((f.name, f.metadata["url"]) for f in fields(Scenario))
SCALARS = tuple((a, u) for a, u in _FIELDS if not u.slot)  # (attribute, UrlField), URL order
SLOTS = tuple((a, u) for a, u in _FIELDS if u.slot)  # each argument's: s, d, a
KEYS = (
    *(u.key for _, u in SCALARS),
    *(f"{u.key}{k}" for k in range(MAX_ARGS) for _, u in SLOTS),
)


@functools.lru_cache(maxsize=64)
def schema(n_devices: int) -> settings.Schema:
    """The explorer's settings (and Live's, and a Compiled explorer program's), one field per
    :class:`Scenario` attribute, as typed: fn, args and body (your own f), out (out_axes),
    name, pn (plan for N devices), then each slot's s (shape), d (dtype), a (in_axes)."""
    defaults = Scenario.defaults("batched_dot", n_devices).texts(every_slot=True)
    made = [u.make(u.key, u.label, defaults[u.key]) for _, u in SCALARS]
    made += [
        u.make(f"{u.key}{k}", f"{u.label} {k + 1}", defaults[f"{u.key}{k}"])
        for k in range(MAX_ARGS)
        for _, u in SLOTS
    ]
    return settings.Schema(tuple(made), (settings.Joint(("args", "body"), _check_expression),))


def inputs(
    texts: Mapping[str, str], shapes: int, axes: int, dtypes: int, labels: Mapping[str, str]
) -> tuple[dict, list[str]]:
    """The planner's inputs from the explorer's text, parsed by its schema (the one place the
    explorer's settings are parsed; the CLI's flags come here too): the first ``shapes``
    shapes, ``axes`` in_axes and ``dtypes`` dtypes (slots s0.., a0.., d0..), and out and name
    where given. Errors name each field by ``labels`` (default: the schema's labels).
    Returns ``({"shapes", "in_axes", "dtypes", "out_axes", "axis_name"}, errors)``; a part
    not asked for (0 dtypes, no out) is None."""
    keys = [
        k
        for i in range(max(shapes, axes, dtypes))
        for k, n in ((f"s{i}", shapes), (f"a{i}", axes), (f"d{i}", dtypes))
        if i < n
    ]
    keys += [k for k in ("out", "name") if k in texts]
    v, errors = schema(1).parse(texts, keys, labels)
    if errors:
        return {}, errors
    return {
        "shapes": [v[f"s{i}"] for i in range(shapes)],
        "in_axes": tuple(v[f"a{i}"] for i in range(axes)),
        "dtypes": [v[f"d{i}"] for i in range(dtypes)] or None,
        "out_axes": v.get("out"),
        "axis_name": v.get("name"),
    }, []
