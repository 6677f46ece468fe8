"""The worker process of :mod:`pmapviz.core.running.sandbox`: runs of your own f, rebuilt from their
settings.

    python -m pmapviz.app.sandboxworker --devices N [--parent PID]

It fixes its device count (emulated CPU devices) before JAX starts, says ``"ready"``, then
answers one request at a time on its pipes (``sandbox.send``: a pickle, its length first):
``(task, *args)`` -> ``(True, result)`` or ``(False, the error)``. A task rebuilds the program
and the plan from the settings' text (``scenarios.program_for``, ``planning.replan``), which
checks them again as the server did: nothing typed is evaluated. The server holds the memory
(its pool) and the turns; the worker only computes. It dies with its parent.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
from collections import OrderedDict

from pmapviz.core.devices import jaxstartup
from pmapviz.core.planning import planning, scenarios
from pmapviz.core.running import pmapcompile, pmaprun, sandbox
from pmapviz.features.cluster import clusterworker
from pmapviz.features.meshes import meshownf, migration, migrationtraps
from pmapviz.features.smap import smaprun
from pmapviz.features.timing import benchmarking, benchreports

_COMPILED: OrderedDict = OrderedDict()  # (ref, key) -> pmapcompile.Compiled, a few kept
KEEP = 4


def _rebuilt(ref: tuple, key: tuple):
    """(program, plan, its compiled pair), the pair kept for the next run of the same f."""
    program = scenarios.program_for(*ref)
    plan = planning.replan(program, key)
    compiled = _COMPILED.pop((ref, key), None) or pmapcompile.compile_plan(program, plan)
    _COMPILED[(ref, key)] = compiled
    while len(_COMPILED) > KEEP:
        _COMPILED.popitem(last=False)
    return program, plan, compiled


def live(ref: tuple, key: tuple, kind: str, seed: int, repeat: int) -> pmaprun.LiveResult:
    """``pmaprun.run_plan`` (the server reserved its memory)."""
    program, plan, compiled = _rebuilt(ref, key)
    return pmaprun.run_plan(program, plan, compiled, kind, seed, repeat, reserve=False)


def timing(ref: tuple, key: tuple, repeat: int, bandwidth_gbs: float) -> benchreports.SweepReport:
    """``benchmarking.measure_plan``'s measurement (the server took its turn and memory)."""
    program, plan, compiled = _rebuilt(ref, key)
    return benchmarking.measure_compiled(program, plan, compiled, repeat, bandwidth_gbs)


def both(ref: tuple, key: tuple, kind: str, seed: int) -> migration.Agreement:
    """``migration.run_both``'s runs (the server reserved their memory)."""
    program = scenarios.program_for(*ref)
    return migration.run_both_here(program, planning.replan(program, key), kind, seed)


def traps(ref: tuple, key: tuple, kind: str, seed: int) -> migrationtraps.Traps:
    """``migrationtraps.run_traps``' runs (the server reserved their memory)."""
    program = scenarios.program_for(*ref)
    return migrationtraps.run_traps_here(program, planning.replan(program, key), kind, seed)


def smap(ref: tuple, key: tuple, settings, kind: str, seed: int) -> smaprun.SmapRun:
    """``smaprun.run``'s runs: smap beside pmap and jit(vmap) (the server reserved their
    memory)."""
    program = scenarios.program_for(*ref)
    return smaprun.run_here(program, planning.replan(program, key), settings, kind, seed)


def mesh(m, args, f, repeat: int, seed: int):
    """``meshownf.run``'s runs of your f on a mesh (the server reserved their memory)."""
    return meshownf.run_views(m, args, f, None, repeat, seed)


TASKS = {"live": live, "timing": timing, "both": both, "traps": traps, "mesh": mesh, "smap": smap}


def answer(request: tuple) -> tuple[bool, object]:
    """(True, result) or (False, the error: itself when it pickles back, else its words)."""
    try:
        return True, TASKS[request[0]](*request[1:])
    except Exception as err:  # noqa: BLE001 - every error goes back to the server
        try:
            pickle.loads(pickle.dumps(err))  # noqa: S301 - a round trip of our own object
            return False, err
        except Exception:  # noqa: BLE001 - an error that does not pickle: its words
            return False, RuntimeError(f"{type(err).__name__}: {err}")


def main(argv: list[str] | None = None) -> int:
    """Serve requests until the server closes the pipe."""
    ap = argparse.ArgumentParser(description="pmapviz's worker for runs of your own f")
    ap.add_argument("--devices", type=int, required=True)
    ap.add_argument("--parent", type=int, default=None)
    args = ap.parse_args(argv)
    clusterworker.die_with_parent(args.parent)
    wanted = ["--devices", str(args.devices), "--platform", "cpu"]
    jaxstartup.apply(jaxstartup.parse_settings(wanted, dict(os.environ)))
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr  # anything printed goes to the log, never into the pipe
    sandbox.send(stdout, "ready")
    size = sandbox.HEADER.size
    while len(head := stdin.read(size)) == size:
        request = pickle.loads(stdin.read(sandbox.HEADER.unpack(head)[0]))  # noqa: S301
        sandbox.send(stdout, answer(request))
    return 0


if __name__ == "__main__":
    sys.exit(main())
