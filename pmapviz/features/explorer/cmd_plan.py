"""python -m pmapviz plan: pmap's plan for shapes and axes, or each problem and its fix."""

from __future__ import annotations

import argparse

from pmapviz.core.base import pytrees, valueparse, valuetext
from pmapviz.core.devices import devicefacts
from pmapviz.core.devices.cliflags import (
    MAX_PLAN_DEVICES,
    _settings,
    _start,
)
from pmapviz.core.expressions import functions
from pmapviz.core.expressions.functions import Program
from pmapviz.core.planning import planning, scenarios
from pmapviz.core.planning.planning import Plan


def plan_args(p: argparse.ArgumentParser) -> None:
    """The plan's flags: the function (--fn, or --expr with --args), shapes, axes, dtypes,
    axis name and --plan-devices (``hlo`` takes the same)."""
    p.add_argument(
        "--fn",
        default=None,
        choices=sorted(functions.BY_KEY),
        help="a function from the catalog (default batched_dot)",
    )
    p.add_argument(
        "--expr",
        default=None,
        metavar="BODY",
        help="your own f instead of --fn: one expression, e.g. 'jnp.tanh(x @ w)' "
        "(checked against an allow-list, never run as Python)",
    )
    p.add_argument(
        "--args", default=None, metavar="NAMES", help="the argument names of --expr, e.g. x,w"
    )
    p.add_argument(
        "--shape",
        action="append",
        metavar="SHAPE",
        help="one per argument, e.g. --shape 8,1250000,3, or a dict / tuple of shapes for a "
        "pytree argument, e.g. --shape \"{'w': (5, 2), 'b': (2,)}\" (default: the fn's example)",
    )
    p.add_argument(
        "--in-axes",
        help="comma-separated, one per argument, e.g. 0,None; or a "
        "tuple with pytree prefixes, e.g. \"(0, {'w': None, 'b': 0})\"",
    )
    p.add_argument(
        "--out-axes", default=None, help="an integer, None or a pytree prefix (default: the fn's)"
    )
    p.add_argument("--axis-name", default=None, help="e.g. i")
    p.add_argument("--dtype", action="append", help="one per argument (default float32)")
    p.add_argument(
        "--plan-devices",
        default=None,
        help="plan for this many devices (default: this process's count); may be "
        "larger than the machine has",
    )


def program_of(args: argparse.Namespace):
    """The catalog function (--fn) or the user's expression (--expr with --args)."""
    if args.expr is None:
        if args.args is not None:
            raise valueparse.SettingError("--args names the arguments of --expr: give both.")
        return functions.get(args.fn or "batched_dot")
    if args.fn is not None:
        raise valueparse.SettingError("give --fn or --expr, not both.")
    if args.args is None:
        raise valueparse.SettingError("--expr needs --args, its argument names, e.g. --args x,w.")
    return scenarios.program_for(scenarios.EXPR, args.args, args.expr)


def plan_inputs(args: argparse.Namespace, program: Program) -> tuple:
    """The plan's shapes, axes, name and dtypes from the flags, parsed by the explorer's own
    schema (:func:`pmapviz.core.planning.scenarios.inputs`) before JAX starts; what the flags leave
    out, the function's defaults. Shapes are None for the function's example, whose mapped
    axes :func:`example_shapes` sizes to the devices once they are known."""
    fn = args.fn or ("f" if args.expr is not None else "batched_dot")
    shapes, dtypes = args.shape or [], args.dtype or []
    if shapes and len(shapes) != program.n_args:
        raise valueparse.SettingError(
            f"{fn} takes {program.n_args} argument(s) ({', '.join(program.arg_names)}); "
            f"give --shape once for each (got {len(shapes)})."
        )
    if dtypes and len(dtypes) != program.n_args:
        raise valueparse.SettingError(
            f"--dtype given {len(dtypes)} time(s); {fn} takes {program.n_args} "
            "argument(s): give it once per argument, or not at all (float32)."
        )
    axes = _in_axes_texts(args.in_axes)
    texts = {
        **{f"s{k}": t for k, t in enumerate(shapes)},
        **{f"a{k}": t for k, t in enumerate(axes or [])},
        **{f"d{k}": t for k, t in enumerate(dtypes)},
        "name": args.axis_name or "",
    }
    if args.out_axes is not None:
        texts["out"] = args.out_axes
    labels = {
        **{f"s{k}": f"--shape {k + 1}" for k in range(len(shapes))},
        **{f"a{k}": "--in-axes" for k in range(len(axes or []))},
        **{f"d{k}": "--dtype" for k in range(len(dtypes))},
        "out": "--out-axes",
    }
    v, errors = scenarios.inputs(texts, len(shapes), len(axes or []), len(dtypes), labels)
    if errors:
        raise valueparse.SettingError(errors[0])
    return (
        v["shapes"] or (None if axes is None else list(program.default_shapes)),
        v["in_axes"] if axes is not None else tuple(program.default_in_axes),
        program.default_out_axes if args.out_axes is None else v["out_axes"],
        v["axis_name"],
        v["dtypes"],
    )


def example_shapes(shapes: list | None, program: Program, n: int) -> list:
    """``shapes`` as given, or the function's example with its mapped axes sized to ``n``
    devices (as the explorer's defaults are), so it fits any device count."""
    return functions.sized_shapes(program, n) if shapes is None else shapes


def _in_axes_texts(text: str | None) -> list[str] | None:
    """--in-axes as one text per argument: '0,None' -> ['0', 'None']; with brackets, one
    tuple of per-argument prefixes, "(0, {'w': None, 'b': 0})" -> ['0', "{'w': None, 'b': 0}"]
    (split at its top-level commas; each part is parsed by the schema)."""
    if text is None:
        return None
    raw = text.strip()
    if not any(ch in raw for ch in "([{"):
        parts = raw.split(",")
    elif raw.startswith("(") and raw.endswith(")"):
        parts = pytrees.split_top_level(raw[1:-1])
    else:
        raise valueparse.SettingError(
            "--in-axes with brackets is one tuple, an entry per "
            "argument, e.g. \"(0, {'w': None, 'b': 0})\"."
        )
    if len(parts) > scenarios.MAX_ARGS:
        raise valueparse.SettingError(
            f"--in-axes has {len(parts)} entries; a function takes at "
            f"most {scenarios.MAX_ARGS} arguments."
        )
    return parts


def planned(args: argparse.Namespace, start: bool = False) -> tuple[Program, Plan]:
    """The flags' function and its plan (JAX started first unless --plan-devices plans
    without it; ``start``: started in any case, for what runs on this process's devices)."""
    device_settings = _settings(args)
    program = program_of(args)
    shapes, in_axes, out_axes, axis_name, dtypes = plan_inputs(args, program)
    n = None
    if args.plan_devices is not None:
        n = valueparse.parse_int(args.plan_devices, "--plan-devices", 1, MAX_PLAN_DEVICES)
    if n is None or start:
        _start(device_settings, args)
    shapes = example_shapes(shapes, program, n or devicefacts.facts().local_count)
    p = planning.plan(
        program,
        shapes,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_name=axis_name,
        n_devices=n,
        dtypes=dtypes,
    )
    return program, p


def cmd_plan(args: argparse.Namespace) -> int:
    """Whether shapes and axes fit pmap: the result shapes, or each problem and its fix (exit 1)."""
    program, p = planned(args)
    if args.json:
        print(p.to_json())
    else:
        print_plan(p, program, p.axis_name)
    return 0 if p.ok else 1


def _argument_lines(p: Plan) -> list[str]:
    """One line per leaf, or per argument as typed where a tree could not be flattened."""
    fmt = valuetext.fmt_shape
    rows = p.leaf_rows()
    if all(pytrees.is_shape(shape) for _, shape, _ in rows):
        return [f"{name}: {fmt(shape)} in_axes={ax}" for name, shape, ax in rows]
    return [
        f"{a.name}: {a.shape_tree} in_axes={pytrees.fmt_prefix(a.in_axes)}" for a in p.arguments
    ]


def print_plan(p: Plan, program: Program, axis_name) -> None:
    """The plan as lines of text: OK or NOT OK, each argument's split, each problem's fix."""
    print(
        f"f({', '.join(program.arg_names)}) = {program.body(axis_name)}, "
        f"pmap over {p.n_devices} device(s): " + ("OK" if p.ok else "NOT OK")
    )
    for line in _argument_lines(p):
        print(f"  {line}")
    if p.ok:
        print(
            f"  each of {p.devices_used} device(s) computes {p.per_device_out_shapes}; "
            f"result {p.out_shapes}"
        )
    for q in p.problems:
        print(f"  problem [{q.code}]: {q.message}\n    fix: {q.fix}")
    for note in p.notes:
        print(f"  note: {note}")
