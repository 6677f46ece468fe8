"""``python -m pmapviz doctor``: the project's own accelerator check, its device sections and
its report (the checks that start commands and processes: :mod:`pmapviz.app.doctorcommands`).

Run it whenever a machine with a GPU or TPU is at hand (it also runs on a laptop). On whatever
devices this process has, it:

* reads the device facts (platform, kind, real or emulated, memory, start-up) and the budgets;
* measures the floor (:func:`pmapviz.core.devices.devicefacts.rates`) and runs a small Timing-lab
sweep,
  checking that the floor is below every implementation's fastest run (within 10 %);
* times the host-to-device copies of one size in both orders (pmap's layout first, then
  vmap's, and the reverse, each at a fresh size), which says whether a slow first transfer
  belongs to pmap or to whichever copy goes first;
* captures a profiler trace of a ``psum`` and counts its device lanes;
* runs every CLI command in a subprocess, and every page through Streamlit's AppTest with its
  main buttons pressed (where Streamlit is installed), and lists any exception, error box,
  or CPU-only claim ("emulated") on a GPU or TPU.

It prints a report (or JSON) and exits 1 when a check failed. Nothing in CI needs a GPU: the
tests run it on CPU devices, and with fake GPU and TPU devices for the words.
"""

from __future__ import annotations

import time
from dataclasses import asdict

from pmapviz.app import doctorcommands
from pmapviz.app.doctorcommands import Here, PageCheck, Progress, say
from pmapviz.core.base.valuetext import first_line
from pmapviz.core.budgets import memorypool
from pmapviz.core.devices import compilecache, devicefacts, deviceset, devicewords, jaxstartup
from pmapviz.core.planning.pmapplacement import pmap_sharding
from pmapviz.features.compiled import tracecapture
from pmapviz.features.timing import benchmarking as bench
from pmapviz.features.timing import sweepsetup, workloads

FLOOR_SLACK = 1.1  # the floor may exceed the fastest run by at most 10 % (timer noise)


def facts_section() -> dict:
    """The devices checked (the machine's own set), every set beside them, the start-up as
    measured where it happened, and the budgets."""
    f = devicefacts.facts()
    stats = devicefacts.device_memory()
    started = devicefacts.startup()
    return {
        **devicewords.facts_json(f),
        "summary": devicewords.summary(f),
        "sets": [devicewords.summary(s) for s in devicefacts.every_set()],
        "startup": None if started is None else asdict(started),
        "startup_lines": devicefacts.startup_lines(started) if started else [],
        "device_memory": None if stats is None else [asdict(m) for m in stats],
        "budget": asdict(memorypool.budget()),
        "budget_lines": memorypool.budget_lines(memorypool.budget(), stats),
        "compile_cache": compilecache.summary(),
    }


def floor_section(sizes: tuple[int, ...] = (2**16, 2**20, 2**22)) -> dict:
    """A dot sweep at a few sizes (each rounded down to split evenly over this process's
    devices: 65,535 on 3): the floor against each size's fastest run."""
    ks = sorted({1, devicefacts.facts().local_count})
    sizes = tuple(sweepsetup.split_evenly(sizes, ks))
    rep = bench.sweep(workloads.WORKLOADS["dot"], list(sizes), ks, list(sweepsetup.IMPLS), repeat=5)
    rows = []
    for s in sizes:
        at = [m for m in rep.results if m.size == s]
        best = min(at, key=lambda m: min(m.run_s))
        floor = at[0].floor_s
        rows.append(
            {
                "size": s,
                "floor_ms": floor * 1e3,
                "fastest": best.impl,
                "fastest_devices": best.devices,
                "fastest_ms": min(best.run_s) * 1e3,
                "floor_over_fastest": floor / min(best.run_s),
                "pmap_transfer_ms": _transfer(at, "pmap"),
                "vmap_transfer_ms": _transfer(at, "vmap"),
                "first_transfer_ms": rep.first_transfer_s.get(s, 0.0) * 1e3,
            }
        )
    return {
        "bandwidth_gbs": rep.bandwidth_gbs,
        "method": rep.floor_method,
        "rows": rows,
        "ok": all(r["floor_over_fastest"] <= FLOOR_SLACK for r in rows),
    }


def _transfer(results, impl: str) -> float | None:
    found = [m.transfer_s for m in results if m.impl == impl and m.devices == 1]
    return found[0] * 1e3 if found else None


def transfer_order_section(pairs: int = 2**23) -> dict:
    """The point-7 experiment: at a size larger than any copied before (the floor's sweep
    stops at 2**22), copy the dot's inputs in pmap's layout then vmap's, and at a larger one
    still in the reverse order. If the first placement is the slow one in both orders, the
    cost belongs to the first copies at a size, not to pmap."""
    import jax
    import numpy as np

    dev0 = devicefacts.local_devices_for_work()[0]

    def put(host, layout) -> float:
        t = time.perf_counter()
        placed = [
            jax.device_put(h, dev0 if layout == "vmap" else pmap_sharding(3, 0, 1))
            for h in (host if layout == "vmap" else [h.reshape(1, *h.shape) for h in host])
        ]
        jax.block_until_ready(placed)
        seconds = time.perf_counter() - t
        for p in placed:
            p.delete()
        return seconds * 1e3

    out = {}
    for k, order in enumerate((("pmap", "vmap"), ("vmap", "pmap"))):
        rng = np.random.default_rng(k)
        host = [rng.random((pairs * (k + 1), 3), dtype=np.float32) for _ in range(2)]
        out[" then ".join(order)] = {layout: put(host, layout) for layout in order}
        del host
    return {"pairs": pairs, "ms": out, "sizes": [pairs, 2 * pairs]}


def timeline_section() -> dict:
    """A profiler trace of a psum: its lanes (ok: one per device), module and collectives."""
    n = devicefacts.facts().local_count
    tl, rows = tracecapture.collective_timeline("psum", n, 1024)
    return {
        "lanes": list(tl.lanes),
        "module": tl.module,
        "calls_seen": tl.calls_seen,
        "collectives": [r.op for r in rows],
        "ok": len(tl.lanes) == n,
    }


def run(
    settings: jaxstartup.Settings,
    progress: Progress = print,
    pages: PageCheck | str = "skipped",
    here: Here | None = None,
) -> dict:
    """Every check, on the machine's own devices (the accelerators where there are; the page
    check runs every page on every set); ``report["ok"]`` is False when any failed. A check
    that raises is reported (its error's type and first line) and the others still run.
    ``pages``: the page check (``pmapviz.app.ui.page_check.section``, which the CLI passes:
    Streamlit is an adapter's business), or why there is none; ``here``: how to run a CLI
    command in this process (``cli.run_here``), for devices that serve one process."""
    jaxstartup.apply(settings)
    with deviceset.use(deviceset.real()):
        return _run_checks(settings, progress, pages, here)


def _run_checks(
    settings: jaxstartup.Settings, progress: Progress, pages: PageCheck | str, here: Here | None
) -> dict:
    t0 = time.perf_counter()
    sections = (
        ("facts", "device facts, budgets", facts_section),
        ("floor", "floor and a small sweep", floor_section),
        ("transfer_order", "transfers in both orders", transfer_order_section),
        ("timeline", "a profiler trace of psum", timeline_section),
        (
            "commands",
            "every CLI command",
            lambda: doctorcommands.commands_section(settings, progress, here),
        ),
        (
            "beside",
            "a second process beside this one",
            lambda: doctorcommands.beside_section(settings),
        ),
        (
            "pages",
            "every page (AppTest)",
            lambda: pages if isinstance(pages, str) else pages(settings, progress),
        ),
    )
    report: dict = {}
    for key, label, check in sections:
        say(progress, label)
        try:
            report[key] = check()
        except Exception as err:  # noqa: BLE001 - one failed check must not hide the others
            report[key] = {
                "failed": f"{type(err).__name__}: {first_line(err)}"
                if str(err)
                else type(err).__name__
            }
    report["seconds"] = time.perf_counter() - t0
    report["ok"] = _all_ok(report)
    return report


def _failed(section) -> str | None:
    return section.get("failed") if isinstance(section, dict) else None


def _all_ok(report: dict) -> bool:
    keys = ("facts", "floor", "transfer_order", "timeline", "commands", "beside", "pages")
    if any(_failed(report.get(k)) for k in keys):
        return False
    if not report["beside"]["ok"]:
        return False
    commands_ok = all(r["rc"] == 0 and not r["traceback"] for r in report["commands"])
    pages = report["pages"] if isinstance(report["pages"], list) else []
    pages_ok = all(not r["exceptions"] and not r["cpu_words"] for r in pages)
    return bool(report["floor"]["ok"] and report["timeline"]["ok"] and commands_ok and pages_ok)


def report_lines(report: dict) -> list[str]:
    """The report as text (a failed check as one line with its error)."""
    lines = [
        f"pmapviz doctor: {'OK' if report['ok'] else 'PROBLEMS FOUND'} ({report['seconds']:.0f} s)"
    ]
    for key, write in (
        ("facts", _facts_lines),
        ("floor", _floor_lines),
        ("transfer_order", _order_lines),
        ("timeline", _timeline_lines),
        ("commands", _command_lines),
        ("beside", _beside_lines),
        ("pages", _page_lines),
    ):
        why = _failed(report[key])
        lines.extend([f"{key}: FAILED {why}"] if why else write(report[key]))
    return lines


def _facts_lines(f: dict) -> list[str]:
    plain = [
        f"  {line}".replace("**", "").replace("`", "")
        for line in f["budget_lines"] + f.get("startup_lines", [])
    ]
    beside = [s for s in f.get("sets", []) if s != f["summary"]]
    return [
        f"devices: {f['summary']}; platform {f['platform']}, kind {f['device_kind']}, "
        f"JAX {f['jax_version']}" + (f"; beside them {', '.join(beside)}" if beside else ""),
        *([f"  {f['compile_cache']}"] if f.get("compile_cache") else []),
        *plain,
    ]


def _beside_lines(b: dict) -> list[str]:
    if "skipped" in b:
        return [f"beside: not needed ({b['skipped']})"]
    named = "" if b.get("names_this_process", True) else " (JAX did not say which process)"
    return [
        f"beside: {'OK' if b['ok'] else 'WRONG'}: a second process was told (exit "
        f"{b['rc']}){named}: {b['said']}",
        f"  the same with --platform cpu: exit {b['cpu_rc']}"
        + (f" ({b['cpu_stderr']})" if b["cpu_stderr"] else ""),
    ]


def _floor_lines(fl: dict) -> list[str]:
    lines = [f"floor: {fl['method']}"]
    for r in fl["rows"]:
        lines.append(
            f"  size {r['size']:>9,}: floor {r['floor_ms']:.3f} ms, fastest "
            f"{r['fastest']} x{r['fastest_devices']} {r['fastest_ms']:.3f} ms "
            f"(floor/fastest {r['floor_over_fastest']:.2f}); transfer pmap "
            f"{r['pmap_transfer_ms'] or 0:.2f} ms, vmap {r['vmap_transfer_ms'] or 0:.2f}"
            f" ms, untimed first copy {r['first_transfer_ms']:.2f} ms"
        )
    return lines


def _order_lines(order: dict) -> list[str]:
    sizes = order.get("sizes") or [order["pairs"]] * len(order["ms"])
    return [
        f"transfers, {name} ({size:,} pairs, a size not copied before): "
        + ", ".join(f"{k} {v:.2f} ms" for k, v in ms.items())
        for (name, ms), size in zip(order["ms"].items(), sizes, strict=False)
    ]


def _timeline_lines(tl: dict) -> list[str]:
    return [f"timeline: {len(tl['lanes'])} lane(s) {tl['lanes']}, collectives {tl['collectives']}"]


def _command_lines(commands: list[dict]) -> list[str]:
    return [
        f"command {r['command']:<8} skipped: {r['skipped']}"
        if "skipped" in r
        else f"command {r['command']:<8} rc {r['rc']} {r['seconds']:5.1f} s"
        + (f" (in {r['where']})" if r.get("where") == "this process" else "")
        + (f"  {r['stderr']}" if r["rc"] else "")
        for r in commands
    ]


def _page_lines(pages) -> list[str]:
    if isinstance(pages, str):
        return [f"pages: {pages}"]
    lines = []
    for r in pages:
        bad = r["exceptions"] + [f"says {w!r}" for w in r["cpu_words"]]
        pressed = f" (pressed {', '.join(r['pressed'])})" if r.get("pressed") else ""
        lines.append(
            f"page {r['page']} {r['query'] or ''}{pressed}: "
            + ("; ".join(bad) if bad else "ok")
            + (
                f" ({len(r['errors'])} error box(es): {r['errors'][0][:120]})"
                if r["errors"]
                else ""
            )
        )
    return lines
