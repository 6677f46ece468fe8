"""python -m pmapviz pod: a program compiled for a TPU slice this machine does not have (per-chip
memory against HBM, FLOPs, bytes, the compiler's estimate, every collective with its groups and
the communication model's time), or swept over slices from 4 to 256 chips."""

from __future__ import annotations

import argparse
import sys

from pmapviz.core.base import valueparse
from pmapviz.core.devices import cliflags
from pmapviz.core.devices.cliflags import _print, _settings, _start
from pmapviz.core.pods import podcalibrate, podcompile, podsweep, podtopology, tpuchips
from pmapviz.core.pods.podprograms import PodProgram
from pmapviz.core.pods.podreport import fmt_seconds
from pmapviz.features.meshes import meshpods, meshspecs
from pmapviz.features.pods import podsettings


def _pod_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--topology",
        default=tpuchips.DEFAULT,
        help=f"the slice, generation:shape (default {tpuchips.DEFAULT}; e.g. v5e:4x4, v4:2x2x2)"
        ", or Cloud's accelerator type: v5litepod-N or v5e-N, v6e-N (N chips), v5p-N, v4-N (N "
        "TensorCores, 2 a chip), e.g. v5litepod-16 = v5e:4x4, v5p-32 = v5p:2x2x4; several "
        f"slices over the data-center network: N x slice, e.g. '{tpuchips.MULTISLICE_EXAMPLE}' "
        f"(1 to {tpuchips.MAX_SLICES} slices)",
    )
    p.add_argument(
        "--hosts",
        default=None,
        metavar="N",
        help="the hosts the slice is rented as, N chips each or Cloud's machine type: v5e and "
        "v6e 4 (libtpu's default) or 8 (ct5lp-hightpu-8t), v4 and v5p 4; the same as "
        "--topology 'v5e:2x4 on 8-chip hosts'",
    )
    p.add_argument(
        "--program",
        default="train",
        choices=[*podsettings.PROGRAMS, "f"],
        help="a built-in program, or f: your --f on a --mesh (default train)",
    )
    p.add_argument("--batch", default=None, help="the program's batch (default: its own)")
    p.add_argument(
        "--sweep",
        nargs="?",
        const="v5e",
        default=None,
        metavar="GEN",
        help="compile for every offered slice of GEN (default v5e) from 4 to 256 chips",
    )
    p.add_argument(
        "--slices",
        default=None,
        metavar="N,N,...",
        help="compile the program for each number of --topology's slice (e.g. 1,2,4,8), "
        "joined over the data-center network, and show where DCN starts to dominate",
    )
    p.add_argument("--min-chips", default="4", metavar="N", help="the sweep's smallest (4)")
    p.add_argument("--max-chips", default="256", metavar="N", help="the sweep's largest (256)")
    p.add_argument(
        "--calibrate",
        action="store_true",
        help="on a TPU machine: also run the program on this machine's chip(s), measured "
        "against the compiler's estimate",
    )
    p.add_argument("--f", default=None, metavar="BODY", help="your f's body, e.g. 'x @ w'")
    p.add_argument("--args", default="x, w", metavar="NAMES", help="f's arguments (x, w)")
    p.add_argument(
        "--mesh",
        default=None,
        help="the mesh's sizes for --f, e.g. 2x4 (on N slices: one slice's mesh; "
        "'dcn' = N is added outermost)",
    )
    p.add_argument("--axis-names", default=None, metavar="NAMES", help="e.g. data,model")
    p.add_argument("--shape", action="append", metavar="SHAPE", help="an argument's shape")
    p.add_argument("--spec", action="append", metavar="SPEC", help="its PartitionSpec")


def _own_f(args: argparse.Namespace) -> PodProgram:
    """Your f on a named mesh, from the flags (the Meshes page's global view)."""
    if not args.f or not args.mesh:
        raise valueparse.SettingError(
            "--program f needs --f and --mesh, e.g. --f 'x @ w' --mesh 2x4 "
            "--shape 64,128 --spec data,None --shape 128,256 --spec None,model."
        )
    sizes = meshspecs.parse_mesh(args.mesh, "--mesh")
    names = meshspecs.parse_axis_names(
        args.axis_names or ", ".join(meshspecs.DEFAULT_NAMES[: len(sizes)]),
        len(sizes),
        "--axis-names",
    )
    mesh = meshspecs.Mesh(sizes, names)
    shapes = [valueparse.parse_shape(t, f"--shape {k + 1}") for k, t in enumerate(args.shape or [])]
    specs = [meshspecs.parse_spec(t, f"--spec {k + 1}") for k, t in enumerate(args.spec or [])]
    if not shapes or len(shapes) != len(specs):
        raise valueparse.SettingError("give --shape and --spec once per argument of --f.")
    for k, (shape, spec) in enumerate(zip(shapes, specs, strict=True)):
        for problem in meshspecs.problems(mesh, shape, spec, f"argument {k + 1}"):
            raise valueparse.SettingError(f"{problem.message} {problem.fix}")
    # several slices: --mesh is one slice's; the compile adds 'dcn' (its note says so)
    why = meshpods.fit_problem(mesh, args.topology)
    if why := why or meshpods.dcn_problem(mesh, shapes, specs, args.topology):
        raise valueparse.SettingError(why)
    try:
        return meshpods.pod_program(mesh, shapes, specs, args.args, args.f)
    except ValueError as err:
        raise valueparse.SettingError(f"--f: {err}") from None


def chosen_program(args: argparse.Namespace) -> PodProgram:
    """The program the flags name, at the flags' batch."""
    if args.program == "f":
        return _own_f(args)
    batch = valueparse.parse_int(args.batch or "0", "--batch", 0, podsettings.MAX_BATCH)
    return podsettings.program(args.program, batch)


def cmd_pod(args: argparse.Namespace) -> int:
    """Compile for the slice (or sweep slices) and print what the compiled program says."""
    if args.hosts is not None:  # read by the topology's own words: 'v5e:2x4 on 8-chip hosts'
        args.topology = f"{args.topology} on {str(args.hosts)[: tpuchips.MAX_TARGET_LEN]}"
    topology = tpuchips.parse_topology(args.topology, "--topology", multislice=True).name
    if said := tpuchips.cloud_words(args.topology):  # Cloud's name: say which slice it is
        print(f"pmapviz: --topology {said}", file=sys.stderr)
    args.topology = topology
    if args.sweep is not None and args.sweep not in tpuchips.GENERATIONS:
        raise valueparse.SettingError(
            f"--sweep {args.sweep!r}: pick one of {', '.join(tpuchips.GENERATIONS)}."
        )
    counts = _slice_counts(args)
    program = chosen_program(args)
    have = podtopology.availability()
    if not have.ok:  # this machine's rule (no libtpu), not a failure: the doctor skips it
        print(f"pmapviz: {have.why}", file=sys.stderr)
        return cliflags.EXIT_NOT_HERE
    _start(_settings(args), args)
    try:
        if counts:
            reports = podsweep.slice_sweep(program, topology, counts)
            rows = podsweep.slice_rows(reports)
            data = {"program": program.asked_text(), "topology": topology, "slices": rows}
            data["dcn_dominates"] = podsweep.dcn_dominates(rows)
            data["reports"] = [r.to_dict() for r in reports]
            _print(args.json, data, _slice_lines(program, reports, rows))
        elif args.sweep is not None:
            lo = valueparse.parse_int(args.min_chips, "--min-chips", 2, tpuchips.MAX_CHIPS)
            hi = valueparse.parse_int(args.max_chips, "--max-chips", lo, tpuchips.MAX_CHIPS)
            try:
                reports = podsweep.sweep(program, args.sweep, lo, hi)
            except ValueError as err:
                raise valueparse.SettingError(str(err)) from None
            rows = podsweep.speedups(reports)
            data = {"program": program.asked_text(), "generation": args.sweep, "sizes": rows}
            data["reports"] = [r.to_dict() for r in reports]
            _print(args.json, data, _sweep_lines(program, rows))
        else:
            report = podcompile.compile_for(program, topology, multislice=True)
            data, lines = report.to_dict(), report.lines()
            if args.calibrate:
                data["calibration"], more = _calibration(program)
                lines.append(more)
            _print(args.json, data, lines)
    except (podcompile.PodError, podtopology.PodUnavailable) as err:
        raise valueparse.SettingError(str(err)) from None
    return 0


def _slice_counts(args: argparse.Namespace) -> list[int]:
    """``--slices 1,2,4,8`` read and bounded ([] without it)."""
    if args.slices is None:
        return []
    if args.sweep is not None or args.calibrate:
        raise valueparse.SettingError("--slices sweeps slice counts: give it without --sweep.")
    if len(str(args.slices)) > 60:
        raise valueparse.SettingError("--slices is too long: give at most 8 counts, e.g. 1,2,4,8.")
    return valueparse.parse_int_list(
        args.slices, "--slices", 1, tpuchips.MAX_SLICES, podsweep.MAX_SLICE_COUNTS
    )


def _slice_lines(program: PodProgram, reports: list, rows: list[dict]) -> list[str]:
    """The slice sweep as a table, each figure from its report's row."""
    ms = lambda s: "  n/a " if s is None else f"{s * 1e3:7.3f}"  # noqa: E731
    out = [
        f"{program.asked_text()}: one step on more and more slices over the data-center network "
        "(compute + HBM: the compiler's estimate, or the roofline estimate where it has none; "
        "ICI and DCN: models)",
        "topology          slices  chips  hosts  compute+HBM ms  ICI ms   DCN ms   step ms  "
        "DCN MiB/device  DCN share",
    ]
    for r in rows:
        share = "  n/a" if r["dcn_share"] is None else f"{r['dcn_share'] * 100:5.1f} %"
        est = "" if r["compute_from"] == "compiler" else " (roofline)"
        out.append(
            f"{r['topology']:<17} {r['slices']:>6}  {r['chips']:>5}  {r['hosts']:>5}  "
            f"{ms(r['compute_hbm_s']):>14}  {ms(r['ici_s'])}  {ms(r['dcn_s'])}  "
            f"{ms(r['step_s'])}  {r['dcn_bytes'] / 2**20:14,.1f}  {share:>9}{est}"
            + ("" if r["fits"] else "  does not fit")
        )
    if said := podsweep.dcn_dominates(rows):
        out.append(said)
    dcn = next((r.dcn_how for r in reports if r.dcn_how), "")
    if dcn:
        out.append(f"DCN: {dcn}")
    return out


def _calibration(program: PodProgram) -> tuple[dict | None, str]:
    """The program run on this machine's chip(s) against its estimate, or why not."""
    try:
        c = podcalibrate.calibrate(program)
    except podcalibrate.NoChip as err:
        return None, f"calibration: {err}"
    ratio = "n/a" if c.ratio is None else f"{c.ratio:.2f}x"
    return c.to_dict(), (
        f"on this machine's {c.devices} {c.device_kind} device(s): measured "
        f"{fmt_seconds(c.measured_s)} (median of {podcalibrate.REPEAT}, dispatch included), "
        f"estimated {fmt_seconds(c.estimate_s)}: {ratio}"
    )


def _sweep_lines(program: PodProgram, rows: list[dict]) -> list[str]:
    ms = lambda s: "  n/a " if s is None else f"{s * 1e3:7.3f}"  # noqa: E731
    out = [
        f"{program.asked_text()}: one step as the slice grows (compute + HBM: the "
        "compiler's estimate; communication: a model)",
        "topology     chips  compute+HBM ms  communication ms  total ms  speed-up  links (model)",
    ]
    for r in rows:
        up = "  n/a" if r["speedup"] is None else f"{r['speedup']:5.2f}x"
        links = (
            "n/a" if r["links"] is None else f"{' x '.join(r['link_axes'])} ({r['links']} links)"
        )
        out.append(
            f"{r['topology']:<12} {r['chips']:>5}  {ms(r['compute_hbm_s']):>14}  "
            f"{ms(r['communication_s']):>16}  {ms(r['total_s']):>8}  {up:>8}  {links}"
            + ("" if r["fits"] else "  does not fit")
        )
    out += [f"{r['topology']}: {line}" for r in rows for line in r["changes"]]
    if rows:  # what the links column counts, and where it changes
        out.append(
            "links (model): the slowest collective's group, per axis of the slice: a ring "
            "(wraparound links), a line, or - (not spanned); and the links each chip drives"
        )
    return out + podsweep.switches(rows)
