"""Exhaustive sweeps and long walks, in parts: the suite runs one part, a full run every part.

A sweep (every hostile link, every text field of every page) is a list of cases that grows with
the app; a long walk (the presenter and three followers, every page on another device count) is
a test that repeats, at length, what a quicker test checks on every run. The suite runs one
part of PARTS of each, chosen by the commit: the commits' count modulo PARTS, so the same commit
always runs the same part (a failure reproduces) and consecutive commits run the others (in a
shallow clone, which counts one commit, the commit's hash modulo PARTS). ``PMAPVIZ_SWEEP``
overrides it: ``all`` for every case and every walk (``benchmarks/sweeps.py`` runs them so), or
``K/N`` for part K (from 0) of N.

A sweep takes its part's cases with ``Part.take``; the long walks (tests marked ``rotates``,
tests/rotation.py) are dealt into parts of about equal cost with ``deal``.
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from typing import TypeVar

from harness.server import ROOT

PARTS = 4
ENV = "PMAPVIZ_SWEEP"
T = TypeVar("T")


@dataclass(frozen=True)
class Part:
    """Part ``index`` of ``parts`` (every case when ``parts`` is 1), and why this one."""

    index: int
    parts: int
    why: str

    def take(self, cases: list[T]) -> list[T]:
        """Every ``parts``-th case, from the ``index``-th: the parts split the cases whole."""
        return cases[self.index :: self.parts]

    def picks(self, costs: dict[str, float]) -> list[str]:
        """The names this part runs of ``costs`` (name -> its cost), dealt by ``deal``."""
        return deal(costs, self.parts)[self.index]

    def __str__(self) -> str:
        if self.parts == 1:
            return f"every case ({self.why})"
        return f"part {self.index} of {self.parts} ({self.why}; {ENV}=all for every case)"


def deal(costs: dict[str, float], parts: int) -> list[list[str]]:
    """``costs``' names dealt into ``parts`` lists of about equal total cost: the costliest first,
    each to the list with the least so far (ties: the first list; names in order of cost, then
    name), so the same names and costs always deal the same way. Each name lands in one list."""
    piles: list[list[str]] = [[] for _ in range(parts)]
    totals = [0.0] * parts
    for name in sorted(costs, key=lambda n: (-costs[n], n)):
        k = totals.index(min(totals))
        piles[k].append(name)
        totals[k] += costs[name]
    return piles


def _git(*args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _commit() -> tuple[int, str] | None:
    """A number for this commit, and what it is: the count of commits to it, or where the
    history is cut short (a shallow clone counts 1), its hash read as a number."""
    if _git("rev-parse", "--is-shallow-repository") == "false":
        count = _git("rev-list", "--count", "HEAD")
        if count and count.isdigit():
            return int(count), f"commit {count} of this branch"
    sha = _git("rev-parse", "HEAD")
    if sha and re.fullmatch(r"[0-9a-f]{40}", sha):
        return int(sha, 16), f"commit {sha[:10]}, by its hash (a shallow clone)"
    return None


def part(environ: dict[str, str] | None = None) -> Part:
    """The part this run takes: from ``PMAPVIZ_SWEEP``, else from the commit (part 0 outside a
    git checkout). A value that is neither ``all`` nor ``K/N`` with 0 <= K < N is a ValueError."""
    value = (os.environ if environ is None else environ).get(ENV, "").strip()
    if value == "all":
        return Part(0, 1, f"{ENV}=all")
    if value:
        m = re.fullmatch(r"(\d{1,3})/(\d{1,3})", value)
        if not m or not int(m[1]) < int(m[2]):
            raise ValueError(f"{ENV}={value!r}: use 'all' or K/N with 0 <= K < N, e.g. 0/4")
        return Part(int(m[1]), int(m[2]), f"{ENV}={value}")
    commit = _commit()
    if commit is None:
        return Part(0, PARTS, "no git history here")
    return Part(commit[0] % PARTS, PARTS, commit[1])
