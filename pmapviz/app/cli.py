"""Command-line interface: ``python -m pmapviz <command> [options]``.

Every command takes ``--devices N`` and ``--platform P`` (validated exactly as the app does)
and applies them before JAX starts. Bad input prints one line to stderr and exits 2.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import sys
from collections.abc import Callable
from dataclasses import asdict

from pmapviz import (
    benchmarking,
    catalog,
    collectiveops,
    devicefacts,
    deviceset,
    devicesetup,
    devicewords,
    explorersettings,
    memory,
    meshspecs,
    planning,
    programanalysis,
    pytrees,
    settings,
    timeline,
    trainingrun,
)
from pmapviz.app import doctor
from pmapviz.catalog import Program
from pmapviz.cluster import cluster, clusterjoin
from pmapviz.live import dotproduct
from pmapviz.planning import Plan

try:  # the pages' check drives Streamlit; a bare accelerator machine may have JAX alone
    from pmapviz.app.ui import page_check
except ImportError:
    page_check = None


def _device_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--devices",
        help=f"emulated CPU devices, {devicesetup.MIN_DEVICES}-"
        f"{devicesetup.MAX_DEVICES} (default: $PMAPVIZ_DEVICES or "
        f"{devicesetup.DEFAULT_DEVICES}); GPUs "
        "and TPUs are used as the machine has them",
    )
    p.add_argument("--platform", help=f"one of {', '.join(devicesetup.PLATFORMS)} (default auto)")
    _device_set_arg(p)
    p.add_argument(
        "--max-bytes",
        help="the host memory budget, shared by every action at once, "
        "e.g. 4G (default: a quarter of the available memory)",
    )
    p.add_argument(
        "--max-device-bytes",
        help="device memory budget of the server on GPUs and "
        "TPUs, e.g. 16G (default: a quarter of the fullest device's free "
        "memory)",
    )
    _max_seconds_arg(p)
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _device_set_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--device-set",
        default="auto",
        metavar="SET",
        help="where the machine has GPUs or TPUs, the process holds them and "
        "--devices emulated CPU devices beside them: cpu, gpu or tpu runs on that "
        "set; auto (default) on the larger set for lessons, on the machine's own "
        "devices for timing",
    )


def _start(
    device_settings: devicesetup.Settings, args: argparse.Namespace, need: str = "many"
) -> str:
    """Start JAX with ``device_settings`` and run the rest of the command on the device set
    ``--device-set`` names (``auto``: the set ``need`` prefers, a ``deviceset.NEEDS`` word).
    Returns the set's name."""
    devicesetup.apply(device_settings)
    name = deviceset.parse(getattr(args, "device_set", None) or "auto", "--device-set")
    name = deviceset.default(need) if name == "auto" else name
    _SCOPES[-1].enter_context(deviceset.use(name))  # until the command returns (main)
    if deviceset.has_two() and getattr(args, "command", "") != "devices":  # it lists them all
        print(set_line(name), file=sys.stderr)
    return name


def set_line(name: str) -> str:
    """Which of two sets a command runs on, and how to pick the other (stderr: the output
    stays the command's own)."""
    other = next(s for s in deviceset.names() if s != name)
    return (
        f"pmapviz: on {devicefacts.facts(name).devices_phrase()} "
        f"(--device-set {other}: {devicefacts.facts(other).devices_phrase()})"
    )


_SCOPES: list[contextlib.ExitStack] = []  # one per command running (main), innermost last


def _settings(args: argparse.Namespace) -> devicesetup.Settings:
    argv: list[str] = []
    if getattr(args, "devices", None) is not None:
        argv += ["--devices", args.devices]
    if getattr(args, "platform", None) is not None:
        argv += ["--platform", args.platform]
    if getattr(args, "max_bytes", None) is not None:
        argv += ["--max-bytes", args.max_bytes]
    if getattr(args, "max_device_bytes", None) is not None:
        argv += ["--max-device-bytes", args.max_device_bytes]
    return devicesetup.parse_settings(argv + _max_seconds_argv(args), os.environ)


def _max_seconds_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--max-seconds",
        help="time limit per action in seconds, 1 to 3600 (default: $PMAPVIZ_MAX_SECONDS or 60)",
    )


def _max_seconds_argv(args: argparse.Namespace) -> list[str]:
    value = getattr(args, "max_seconds", None)
    return [] if value is None else ["--max-seconds", value]


def cmd_devices(args: argparse.Namespace) -> int:
    """The devices this process gets, every set beside them, their memory and the budgets."""
    _start(_settings(args), args)
    report = devicesetup.describe(devicesetup.applied_settings())
    facts, budget = report.facts, memory.budget()
    stats = devicefacts.device_memory()
    started = devicefacts.startup()
    if args.json:
        out = {
            "requested": asdict(report.requested),
            **devicewords.facts_json(facts),
            "sets": [devicewords.facts_json(f) for f in report.sets],
            "startup": None if started is None else asdict(started),
            "notes": list(report.notes),
            "device_memory": None if stats is None else [asdict(m) for m in stats],
            "budget": asdict(budget),
        }
        print(json.dumps(out, indent=2))
        return 0
    for f in report.sets:
        mark = " (this command's set)" if f.platform == facts.platform and f.beside else ""
        print(
            f"{devicewords.summary(f)}: platform {f.platform}, kind {f.device_kind!r}, "
            f"JAX {f.jax_version}, {f.physical_cores} physical core(s){mark}"
        )
        for d in f.devices:
            print(f"  {d.label:>8}  id {d.id:<3} process {d.process_index}")
    for line in memory.budget_lines(budget, stats) + (
        devicefacts.startup_lines(started) if started else []
    ):
        print(line.replace("**", "").replace("`", ""))
    for note in (*report.notes, *facts.hints):
        print(f"note: {note}")
    return 0


def _print(as_json: bool, data: dict, lines: list[str]) -> None:
    """A command's result: one JSON object, or its lines of text."""
    print(json.dumps(data, indent=2) if as_json else "\n".join(lines))


def _plan_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--fn",
        default=None,
        choices=sorted(catalog.BY_KEY),
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


def _program(args: argparse.Namespace):
    """The catalog function (--fn) or the user's expression (--expr with --args)."""
    if args.expr is None:
        if args.args is not None:
            raise settings.SettingError("--args names the arguments of --expr: give both.")
        return catalog.get(args.fn or "batched_dot")
    if args.fn is not None:
        raise settings.SettingError("give --fn or --expr, not both.")
    if args.args is None:
        raise settings.SettingError("--expr needs --args, its argument names, e.g. --args x,w.")
    return explorersettings.program_for(explorersettings.EXPR, args.args, args.expr)


def _plan_inputs(args: argparse.Namespace, program: Program) -> tuple:
    """The plan's shapes, axes, name and dtypes from the flags, parsed by the explorer's own
    schema (:func:`pmapviz.explorersettings.inputs`); what the flags leave out, the function's
    defaults."""
    fn = args.fn or ("f" if args.expr is not None else "batched_dot")
    shapes, dtypes = args.shape or [], args.dtype or []
    if shapes and len(shapes) != program.n_args:
        raise settings.SettingError(
            f"{fn} takes {program.n_args} argument(s) ({', '.join(program.arg_names)}); "
            f"give --shape once for each (got {len(shapes)})."
        )
    if dtypes and len(dtypes) != program.n_args:
        raise settings.SettingError(
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
    v, errors = explorersettings.inputs(texts, len(shapes), len(axes or []), len(dtypes), labels)
    if errors:
        raise settings.SettingError(errors[0])
    return (
        v["shapes"] or list(program.default_shapes),
        v["in_axes"] if axes is not None else tuple(program.default_in_axes),
        program.default_out_axes if args.out_axes is None else v["out_axes"],
        v["axis_name"],
        v["dtypes"],
    )


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
        raise settings.SettingError(
            "--in-axes with brackets is one tuple, an entry per "
            "argument, e.g. \"(0, {'w': None, 'b': 0})\"."
        )
    if len(parts) > explorersettings.MAX_ARGS:
        raise settings.SettingError(
            f"--in-axes has {len(parts)} entries; a function takes at "
            f"most {explorersettings.MAX_ARGS} arguments."
        )
    return parts


def cmd_plan(args: argparse.Namespace) -> int:
    """Whether shapes and axes fit pmap: the result shapes, or each problem and its fix (exit 1)."""
    device_settings = _settings(args)
    program = _program(args)
    shapes, in_axes, out_axes, axis_name, dtypes = _plan_inputs(args, program)
    n = None
    if args.plan_devices is not None:
        n = settings.parse_int(args.plan_devices, "--plan-devices", 1, MAX_PLAN_DEVICES)
    else:
        _start(device_settings, args)
    p = planning.plan(
        program,
        shapes,
        in_axes=in_axes,
        out_axes=out_axes,
        axis_name=axis_name,
        n_devices=n,
        dtypes=dtypes,
    )
    if args.json:
        print(p.to_json())
    else:
        _print_plan(p, program, axis_name)
    return 0 if p.ok else 1


def _argument_lines(p: Plan) -> list[str]:
    """One line per leaf, or per argument as typed where a tree could not be flattened."""
    fmt = settings.fmt_shape
    rows = p.leaf_rows()
    if all(pytrees.is_shape(shape) for _, shape, _ in rows):
        return [f"{name}: {fmt(shape)} in_axes={ax}" for name, shape, ax in rows]
    return [
        f"{a.name}: {a.shape_tree} in_axes={pytrees.fmt_prefix(a.in_axes)}" for a in p.arguments
    ]


def _print_plan(p: Plan, program: Program, axis_name) -> None:
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


def _hlo_args(p: argparse.ArgumentParser) -> None:
    _plan_args(p)
    p.add_argument(
        "--collective",
        default=None,
        choices=[c.key for c in collectiveops.COLLECTIVES],
        help="a collective of the playground instead of --fn",
    )
    p.add_argument("--groups", default=None, help="axis_index_groups, e.g. '0 1 | 2 3'")
    p.add_argument(
        "--perm", default=None, help="ppermute pairs, e.g. '0->1, 1->0' (default: ring right)"
    )
    p.add_argument("--elements", default=None, help="elements per device (default: devices)")


def cmd_hlo(args: argparse.Namespace) -> int:
    """What XLA compiled for the plan or a playground collective: collectives, cost, memory."""
    if args.plan_devices is not None:
        raise settings.SettingError("hlo compiles for this process's devices: use --devices.")
    if args.collective is None:
        program = _program(args)
        shapes, in_axes, out_axes, axis_name, dtypes = _plan_inputs(args, program)
    _start(_settings(args), args)
    n = devicefacts.facts().local_count
    if args.collective is None:
        p = planning.plan(
            program, shapes, in_axes=in_axes, out_axes=out_axes, axis_name=axis_name, dtypes=dtypes
        )
        if not p.ok:
            _print_plan(p, program, axis_name)
            return 1
        analysis = programanalysis.analyse_plan(program, p)
    else:
        m = settings.parse_int(args.elements or str(n), "--elements", 1, MAX_ELEMENTS_HLO)
        try:
            groups = collectiveops.parse_groups(args.groups or "", n)
            perm = collectiveops.parse_pairs(args.perm, n) if args.perm else None
            analysis = programanalysis.analyse_collective(args.collective, n, m, groups, perm)
        except collectiveops.CollectiveError as err:
            print(f"pmapviz: {err}", file=sys.stderr)
            return 2
    _print(args.json, analysis.to_json(), programanalysis.summary_lines(analysis))
    return 0


def _dot_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pairs", default="10000000", help="number of pairs of 3-vectors (default 10M)")
    p.add_argument("--repeat", default="3", help="timed runs after a warm-up, 1 to 100")
    p.add_argument("--seed", default="0", help=f"0 to {MAX_SEED:,}")


def cmd_dot(args: argparse.Namespace) -> int:
    """The seed's pmap(vmap(dot)) example, timed and checked against jit(vmap(dot))."""
    _start(_settings(args), args)
    pairs = settings.parse_int(args.pairs, "--pairs", dotproduct.MIN_PAIRS, MAX_PAIRS)
    repeat = settings.parse_int(args.repeat, "--repeat", 1, MAX_REPEAT)
    seed = settings.parse_int(args.seed, "--seed", 0, MAX_SEED)
    try:
        res = dotproduct.run_dot(
            pairs,
            seed=seed,
            repeat=repeat,
            progress=(
                None if args.json else lambda text, frac: print(f"[{frac:4.0%}] {text}", flush=True)
            ),
        )
    except dotproduct.DotError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    if args.json:
        out = res.to_json()
        out.pop("per_device")
        print(json.dumps(out, indent=2))
    else:
        print(
            f"pmap out {res.pmap_out_shape} -> reshape -> {res.flat_shape}; vs jit(vmap(dot)): "
            f"max |diff| {res.max_abs_diff:.3g}, allclose={res.allclose}"
        )
        shared = " (the devices share the host's memory: no copy)" if res.zero_copy else ""
        print(
            f"compile {res.compile_s * 1e3:.0f} ms, transfer {res.transfer_s * 1e3:.1f} ms"
            f"{shared}, run {res.run_s * 1e3:.1f} ms (median); one-device vmap run "
            f"{res.vmap_run_s * 1e3:.1f} ms; host memory grew {res.host_growth_mb or 0:.0f} "
            "MB"
        )
    return 0 if res.allclose else 1


def _bench_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workload", default="dot", choices=sorted(benchmarking.WORKLOADS))
    p.add_argument("--size", default="1048576", help="comma-separated sizes, e.g. 65536,1048576")
    p.add_argument(
        "--devices",
        default=None,
        help="device counts to compare, e.g. 1,2,4,8; on CPU the process gets the "
        "largest (default: 1, 2, 4, ... up to the devices the process has: "
        "$PMAPVIZ_DEVICES or 8 on CPU, the machine's GPUs or TPUs)",
    )
    p.add_argument("--platform", help=f"one of {', '.join(devicesetup.PLATFORMS)} (default auto)")
    _device_set_arg(p)
    p.add_argument("--impls", default=None, help="comma-separated subset of the implementations")
    p.add_argument("--repeat", default="7", help="timed runs per measurement, 1 to 100")
    _max_seconds_arg(p)
    p.add_argument(
        "--json",
        nargs="?",
        const="-",
        default=None,
        metavar="FILE",
        help="write the JSON report to FILE (or stdout without FILE)",
    )


def _bench_inputs(args: argparse.Namespace) -> tuple:
    """Device counts, sizes, implementations, repeat and the --json file (None: stdout or no
    file) from the flags (settings layer), all checked before the sweep starts."""
    ks = (
        settings.parse_int_list(
            args.devices, "--devices", devicesetup.MIN_DEVICES, devicesetup.MAX_DEVICES
        )
        if args.devices
        else None
    )
    argv = ["--devices", str(max(ks))] if ks else []
    if args.platform:
        argv += ["--platform", args.platform]
    device_settings = devicesetup.parse_settings(argv + _max_seconds_argv(args), os.environ)
    sizes = settings.parse_int_list(args.size, "--size", 1, MAX_BENCH_SIZE)
    impls = (
        [settings.parse_choice(i, "--impls", benchmarking.IMPLS) for i in args.impls.split(",")]
        if args.impls
        else list(benchmarking.IMPLS)
    )
    repeat = settings.parse_int(args.repeat, "--repeat", 1, MAX_REPEAT)
    target = (
        None
        if args.json in (None, "-")  # "-": stdout
        else settings.parse_output_path(args.json, "--json", "bench.json")
    )
    return device_settings, ks, sizes, impls, repeat, target


def cmd_bench(args: argparse.Namespace) -> int:
    """Each implementation timed at each size and device count; the report as text or JSON."""
    device_settings, ks, sizes, impls, repeat, target = _bench_inputs(args)
    _start(device_settings, args, "real")
    ks = ks or benchmarking.device_counts(devicefacts.facts().local_count)  # the devices it has
    try:
        report = benchmarking.sweep(
            benchmarking.WORKLOADS[args.workload],
            sizes,
            ks,
            impls,
            repeat=repeat,
            progress=None
            if args.json == "-"
            else (
                lambda m, i, t: print(
                    f"[{i}/{t}] {m.impl:12} x{m.devices:<3} size {m.size:>10,}: "
                    f"compile {m.compile_s * 1e3:7.1f} ms  transfer "
                    f"{m.transfer_s * 1e3:7.2f} ms  run {m.run_s_median * 1e3:8.3f}"
                    f" ms  floor {m.floor_s * 1e3:.3f} ms",
                    flush=True,
                )
            ),
        )
    except benchmarking.BenchError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    data = report.to_json()
    if args.json == "-":
        print(json.dumps(data, indent=2))
    else:
        if target is not None:
            try:
                target.write_text(json.dumps(data, indent=2), encoding="utf-8")
            except OSError as err:  # checked before the sweep; a full disk is found only now
                print(f"pmapviz: --json {target}: {err.strerror}", file=sys.stderr)
                return 1
        print(
            f"memory bandwidth (the floor) {report.floor_method}; {len(report.results)} "
            f"results" + (f", written to {target}" if target else "")
        )
    return 0


def _train_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", default="linear", choices=trainingrun.MODELS)
    p.add_argument("--steps", default="100")
    p.add_argument("--batch", default="256", help="global batch, split over the devices")
    p.add_argument("--lr", default="0.05", help="learning rate, above 0 and at most 100")
    p.add_argument("--reduction", default="pmean", choices=trainingrun.REDUCTIONS)
    p.add_argument("--seed", default="0", help=f"0 to {MAX_SEED:,}")


def cmd_train(args: argparse.Namespace) -> int:
    """Data-parallel training with pmap, checked against one device (exit 1: it diverged)."""
    _start(_settings(args), args)
    cfg = trainingrun.Config(
        args.model,
        devicefacts.facts().local_count,
        settings.parse_int(args.batch, "--batch", 1, trainingrun.MAX_BATCH),
        settings.parse_int(args.steps, "--steps", 1, trainingrun.MAX_STEPS),
        settings.parse_float(args.lr, "--lr", 1e-6, 100.0),
        args.reduction,
        settings.parse_int(args.seed, "--seed", 0, MAX_SEED),
    )
    try:
        hist = trainingrun.train(cfg)
    except trainingrun.TrainError as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    out = hist.to_json()
    if args.json:
        for key in ("local_losses", "local_grad_norms"):
            out.pop(key)
        print(json.dumps(out, indent=2))
    else:
        print(
            f"{cfg.model} on {cfg.devices} devices, batch {cfg.batch} ({cfg.local_batch} "
            f"per device), {len(hist.losses)} steps: loss {hist.losses[0]:.4g} -> "
            f"{hist.losses[-1]:.4g}; replicas identical every step: "
            f"{hist.replicas_identical}; max |param diff| vs one device: "
            f"{hist.max_param_diff}"
        )
    if hist.diverged_at is not None:
        print(
            f"pmapviz: training diverged at step {hist.diverged_at + 1}; lower --lr",
            file=sys.stderr,
        )
        return 1
    return 0


def _cluster_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--join",
        action="store_true",
        help="join the real cluster this process was "
        "started in (by srun, mpirun, or on every TPU host) with jax.distributed."
        "initialize() and no arguments; process 0 gathers the report",
    )
    p.add_argument(
        "--report",
        metavar="PATH",
        help="with --join: process 0 writes the report (one JSON object) here",
    )
    p.add_argument("--processes", default="2", help="worker processes, 2 to 4")
    p.add_argument(
        "--local-devices",
        default=None,
        help="CPU devices per process, 1 to 4 "
        f"(default 2); with --join, 1 to {clusterjoin.MAX_LOCAL} emulated CPU devices "
        "(default: the devices JAX gives each process)",
    )
    p.add_argument(
        "--timeout",
        default=None,
        help="seconds before a worker is declared hung, "
        f"1 to 600 (default 45); with --join, 1 to {clusterjoin.MAX_TIMEOUT:.0f} (default "
        f"{clusterjoin.DEFAULT_TIMEOUT:.0f})",
    )
    p.add_argument(
        "--max-bytes",
        help="memory budget, e.g. 4G (default: $PMAPVIZ_MAX_BYTES or "
        "a quarter of the available memory)",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _exit_on_signals() -> None:
    """SIGTERM, SIGINT, SIGHUP exit through the ``finally`` blocks, which kill the workers'
    process groups (and the workers die with this process anyway: worker.die_with_parent)."""
    import signal

    def _exit(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, _exit)


def cmd_cluster(args: argparse.Namespace) -> int:
    """A local jax.distributed cluster's local and global devices; with --join, one process
    of a real cluster."""
    if args.join:
        return _cmd_join(args)
    if args.report is not None:
        raise settings.SettingError(
            "--report PATH goes with --join (the loopback launch "
            "prints its result; add --json for JSON)."
        )
    processes = settings.parse_int(
        args.processes, "--processes", cluster.MIN_PROCESSES, cluster.MAX_PROCESSES
    )
    local = settings.parse_int(
        _given(args.local_devices, "2"), "--local-devices", cluster.MIN_LOCAL, cluster.MAX_LOCAL
    )
    timeout = settings.parse_float(
        _given(args.timeout, "45"), "--timeout", 1.0, MAX_CLUSTER_TIMEOUT
    )
    devicesetup.apply(_settings(args))  # the memory budget (--max-bytes / PMAPVIZ_MAX_BYTES)
    _exit_on_signals()
    try:
        res = cluster.launch(processes, local, timeout=timeout)
    except cluster.NoSockets as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return cluster.EXIT_NO_SOCKETS  # this machine's rule, not a failure of the cluster
    except (cluster.ClusterError, OSError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps(res.to_json(), indent=2))
    else:
        print(
            f"{res.processes} processes x {res.local_devices} devices = {res.global_devices} "
            f"global devices, {res.seconds:.1f} s"
        )
        for pp in res.per_process:
            print(
                f"  process {pp['process_index']}: local devices {pp['local_device_ids']}, "
                f"psum {pp['psum']}, all_gather {pp['all_gather']}"
            )
    return 0


def _given(value: str | None, default: str) -> str:
    """A flag's text, or its default where it was not given (an empty text is given)."""
    return default if value is None else value


def _cmd_join(args: argparse.Namespace) -> int:
    """One process of a real cluster (pmapviz.cluster.clusterjoin): no devicesetup.apply here,
    since JAX must not start before jax.distributed.initialize(). Process 0 prints the report;
    the others print one line each (nothing with --json, so a launcher's merged output is one
    JSON object)."""
    local = (
        None
        if args.local_devices is None
        else settings.parse_int(
            args.local_devices, "--local-devices", clusterjoin.MIN_LOCAL, clusterjoin.MAX_LOCAL
        )
    )
    timeout = settings.parse_float(
        _given(args.timeout, f"{clusterjoin.DEFAULT_TIMEOUT:g}"),
        "--timeout",
        clusterjoin.MIN_TIMEOUT,
        clusterjoin.MAX_TIMEOUT,
    )
    target = (
        None
        if args.report is None
        else settings.parse_output_path(args.report, "--report", "cluster-report.json")
    )
    try:
        outcome = clusterjoin.join(local, timeout)
    except clusterjoin.JoinError as err:
        print(f"pmapviz: {err}", file=sys.stderr, flush=True)
        return 1
    report, rec = outcome.report, outcome.record
    if report is None:
        if not args.json:
            print(
                f"process {rec['process_index']} on {rec['hostname']}: local devices "
                f"{rec['local_device_ids']}, psum {rec['psum']:g}"
            )
        return 0
    if target is not None:
        try:
            target.write_text(json.dumps(report, indent=2) + "\n")
        except OSError as err:
            print(f"pmapviz: --report {target}: {err.strerror}", file=sys.stderr)
            return 1
    _print(
        args.json,
        report,
        clusterjoin.summary(report) + ([f"report written to {target}"] if target else []),
    )
    return 0 if report["check"]["ok"] else 1


def _trace_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "path",
        help="a perfetto_trace.json.gz (or .json), or the folder that "
        "jax.profiler.trace(folder, create_perfetto_trace=True) wrote",
    )
    p.add_argument(
        "--module",
        default=None,
        metavar="NAME",
        help="show the last complete call of this module (its name as the "
        "trace gives it, e.g. jit__fun(1615...)); default: the last complete "
        "call of any",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")


def cmd_trace(args: argparse.Namespace) -> int:
    """One lane per device of a profiler trace from any machine (CPU, GPU or TPU), each op's
    bytes and achieved GB/s where the trace counts them (TPU); no JAX."""
    try:
        raw = timeline.read_trace(args.path)
        tl = timeline.from_trace(raw, args.module)
    except (timeline.TraceError, OSError) as err:
        print(f"pmapviz: {err}", file=sys.stderr)
        return 2
    if args.module is not None and not tl.calls_seen:
        names = sorted({e.module for e in timeline.device_events(raw) if e.module})
        print(
            f"pmapviz: no call of module {args.module[:80]!r} in the trace; its modules: "
            f"{', '.join(names) or 'none named'}",
            file=sys.stderr,
        )
        return 2
    _print(args.json, tl.to_json(), timeline.summary_lines(tl))
    return 0


def cmd_doctor(args: argparse.Namespace) -> int:
    """Every command and every page on the devices present; a report (see pmapviz.app.doctor)."""
    report = doctor.run(
        _settings(args),
        progress=None if args.json else print,
        pages=page_check.section if page_check else doctor.NO_STREAMLIT,
        here=run_here,
    )
    _print(args.json, report, [] if args.json else doctor.report_lines(report))
    return 0 if report["ok"] else 1


def _mesh_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--mesh",
        default=None,
        help="the mesh's axis sizes, e.g. 2,4 or 2x4 "
        "(default: 2 x n/2 of the devices, or n on one axis)",
    )
    p.add_argument(
        "--axis-names",
        default=None,
        metavar="NAMES",
        help="one name per mesh axis, e.g. data,model (default: data, model, ...)",
    )
    p.add_argument(
        "--shape",
        action="append",
        metavar="SHAPE",
        help="an argument's global shape, e.g. 8,16 (once per argument)",
    )
    p.add_argument(
        "--spec",
        action="append",
        metavar="SPEC",
        help="its PartitionSpec as you would write it: \"P('data', None)\", "
        "\"P(('data', 'model'))\", \"P()\", or data,None (once per --shape)",
    )
    p.add_argument(
        "--plan-devices",
        default=None,
        metavar="N",
        help="plan for a mesh of N devices from shapes alone (N = the mesh's size)",
    )


def _mesh_inputs(args: argparse.Namespace, n_devices: int | None) -> tuple:
    """The mesh, the shapes and the specs from the flags, through the settings layer (no
    ``--mesh``: the default mesh of ``n_devices``, as the Meshes page's; nothing at all: the
    page's example arguments too)."""
    if args.mesh is None and n_devices is None:
        raise settings.SettingError("give --mesh with --plan-devices, e.g. --mesh 4x4.")
    sizes = (
        meshspecs.parse_mesh(args.mesh, "--mesh")
        if args.mesh is not None
        else meshspecs.default_mesh(n_devices)
    )
    names = meshspecs.parse_axis_names(
        args.axis_names or ", ".join(meshspecs.DEFAULT_NAMES[: len(sizes)]),
        len(sizes),
        "--axis-names",
    )
    shape_texts, spec_texts = args.shape or [], args.spec or []
    if args.mesh is None and not shape_texts and not spec_texts:  # the Meshes page's example
        page = meshspecs.schema(n_devices).defaults()
        shape_texts = [page[f"s{k}"] for k in range(meshspecs.MAX_ARGS) if page[f"s{k}"].strip()]
        spec_texts = [page[f"p{k}"] for k in range(len(shape_texts))]
    shapes = [settings.parse_shape(t, f"--shape {k + 1}") for k, t in enumerate(shape_texts)]
    specs = [meshspecs.parse_spec(t, f"--spec {k + 1}") for k, t in enumerate(spec_texts)]
    if not shapes or len(specs) != len(shapes):
        raise settings.SettingError(
            f"give --shape and --spec once per argument (got "
            f"{len(shapes)} --shape and {len(specs)} --spec)."
        )
    return meshspecs.Mesh(sizes, names), shapes, specs


def cmd_mesh(args: argparse.Namespace) -> int:
    """Which device holds which block of each argument on a named mesh (exit 1: a spec fails)."""
    device_settings = _settings(args)
    if args.plan_devices is not None:
        n = settings.parse_int(args.plan_devices, "--plan-devices", 1, meshspecs.MAX_MESH_DEVICES)
        mesh, shapes, specs = _mesh_inputs(args, n if args.mesh is None else None)
        if n != mesh.devices:
            raise settings.SettingError(
                f"--plan-devices {n}, but the mesh {mesh.text()} has {mesh.devices} devices: "
                "give that number."
            )
        jax_devices = None
    else:
        _start(device_settings, args)
        have = devicefacts.facts().local_count
        mesh, shapes, specs = _mesh_inputs(args, have)
        if have < mesh.devices:
            raise settings.SettingError(
                f"the mesh {mesh.text()} needs {mesh.devices} devices; "
                f"{devicefacts.facts().devices_phrase()} here: "
                f"{devicewords.more_devices(devicefacts.facts(), mesh.devices)}, or plan with "
                f"--plan-devices {mesh.devices}."
            )
        jax_devices = devicefacts.local_devices_for_work()
    found = [
        (k, p)
        for k, (shape, spec) in enumerate(zip(shapes, specs, strict=True))
        for p in meshspecs.problems(mesh, shape, spec, f"argument {k + 1}")
    ]
    placed = (
        []
        if found
        else [
            meshspecs.place(mesh, shape, spec, jax_devices)
            for shape, spec in zip(shapes, specs, strict=True)
        ]
    )
    data = {
        "mesh": {
            "shape": list(mesh.shape),
            "axis_names": list(mesh.names),
            "devices": meshspecs.device_grid(mesh, placed[0].blocks) if placed else None,
        },
        "arguments": [p.to_dict() for p in placed],
        "problems": [
            {"argument": k + 1, "code": p.code, "message": p.message, "fix": p.fix}
            for k, p in found
        ],
    }
    _print(args.json, data, _mesh_lines(mesh, placed, found))
    return 1 if found else 0


def _mesh_lines(mesh: meshspecs.Mesh, placed: list, found: list) -> list[str]:
    lines = [f"mesh {mesh.text()} ({mesh.devices} device{'s' * (mesh.devices != 1)})"]
    for k, p in found:
        lines += [f"argument {k + 1}: {p.message}", f"  fix: {p.fix}"]
    for k, p in enumerate(placed):
        rep = f"; replicated over {', '.join(p.replicated_over)}" if p.replicated_over else ""
        lines.append(
            f"argument {k + 1}: {settings.fmt_shape(p.shape)} "
            f"{meshspecs.spec_text(p.spec)}: each device holds "
            f"{settings.fmt_shape(p.local_shape)}{rep}"
        )
        lines += [
            f"  device {b.device} at {b.coords}: "
            + "["
            + ", ".join(f"{a}:{z}" for a, z in b.index)
            + "]"
            for b in p.blocks
        ]
    return lines


MAX_PLAN_DEVICES = 65_536
MAX_ELEMENTS_HLO = 2**24
MAX_PAIRS = 10**9
MAX_REPEAT = 100
MAX_SEED = 2**32 - 1
MAX_BENCH_SIZE = 2**32
MAX_CLUSTER_TIMEOUT = 600.0


COMMANDS: dict[str, tuple[Callable[[argparse.Namespace], int], str, Callable | None]] = {
    "devices": (cmd_devices, "show the devices this process gets", None),
    "plan": (cmd_plan, "validate shapes and axes for pmap, and give the result shapes", _plan_args),
    "hlo": (cmd_hlo, "what XLA compiled: collectives, cost and memory, four variants", _hlo_args),
    "dot": (cmd_dot, "the seed's pmap(vmap(dot)) example, checked against vmap", _dot_args),
    "train": (
        cmd_train,
        "data-parallel training with pmap, checked against one device",
        _train_args,
    ),
    "cluster": (
        cmd_cluster,
        "a local jax.distributed cluster: local vs global devices; --join: a real one",
        _cluster_args,
    ),
    "bench": (cmd_bench, "time pmap, vmap, jit+NamedSharding, shard_map and numpy", _bench_args),
    "trace": (cmd_trace, "one lane per device of a profiler trace from any machine", _trace_args),
    "doctor": (cmd_doctor, "run every command and page on the devices here; a report", None),
    "mesh": (
        cmd_mesh,
        "a named mesh and PartitionSpecs: which device holds which block",
        _mesh_args,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m pmapviz`` parser: one subcommand per entry of :data:`COMMANDS`."""
    parser = argparse.ArgumentParser(prog="python -m pmapviz", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, (func, help_text, extra) in COMMANDS.items():
        p = sub.add_parser(name, help=help_text, description=help_text)
        if name not in ("bench", "cluster", "trace"):  # their own device flags, or none
            _device_args(p)
        if extra:
            extra(p)
        p.set_defaults(func=func)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Runs one command; its exit status (2, with one line on stderr, for bad input)."""
    args = build_parser().parse_args(argv)
    with contextlib.ExitStack() as scope:  # the command's device set (_start) ends with it
        _SCOPES.append(scope)
        try:
            return args.func(args)
        except settings.SettingError as err:
            print(f"pmapviz: {err}", file=sys.stderr)
            return 2
        finally:
            _SCOPES.pop()


def run_here(argv: list[str]) -> tuple[int, str, str]:
    """One command in this process (``doctor`` on a TPU, whose chip serves one process):
    ``(exit status, stdout, stderr)``, as a subprocess would give them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as stop:  # argparse's own refusals
            rc = stop.code if isinstance(stop.code, int) else 2
    return rc, out.getvalue(), err.getvalue()
