"""Multislice in a compiled program: the transfers between slices, and which network each
collective runs on.

A program compiled for several slices (``get_topology_desc(..., num_slices=N)``) is one slice's
program (``num_partitions`` = one slice's devices): its replica groups number the devices of
one slice, and what crosses slices is a ``send``/``recv`` pair handed to the data-center
network's runtime. Measured on libtpu 0.0.42 (v5e:2x4, 2 and 4 slices, a data-parallel step)::

    send(...), is_host_transfer=true, frontend_attributes={
      _xla_host_transfer_handler_name="xla_megascale_runtime",
      _xla_host_transfer_rendezvous="all-reduce.1_0", _xla_megascale_reduce_operation="SUM",
      _xla_megascale_target="{1,2}x{0:7}", _xla_megascale_transfer_type="ALL_REDUCE"}

The target reads as the slices (numbered from 1: ``{1,2}`` on 2 slices, ``{1,2,3,4}`` on 4)
times the partitions of each (``{0:7}``: devices 0 to 7 of a slice): device k of every slice
named exchanges with device k of the others. A pmap's ``ppermute`` and ``all_to_all`` across
slices name device ids instead, unquoted (the same libtpu, 2 x v5e:2x4)::

    _xla_megascale_target={{100007->200000},{200007->100000}},
    _xla_megascale_transfer_type="ONE_TO_ONE"          # the pairs that cross slices
    _xla_megascale_target={{100000,100001,...,200007}},
    _xla_megascale_transfer_type="ALL_TO_ALL"          # the group, every slice's devices
 A gradient's all-reduce over ``('dcn', 'chips')``
becomes three phases: a reduce-scatter inside each slice, this send/recv between slices (1/8
of the gradient a device on 8-device slices), then an all-gather inside each slice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pmapviz.core.xla.hlo import DTYPE_BYTES

HANDLER = "xla_megascale_runtime"
ICI, DCN = "ICI", "DCN"
_LINE = re.compile(
    r"^\s*(?:ROOT\s+)?%?(?P<name>[\w.\-]+)\s*=\s*\((?P<dtype>[a-z0-9]+)\[(?P<dims>[0-9,]*)\]"
    r"[^=]*?\s(?P<kind>send|recv)\("
)
_ATTR = re.compile(r'(_xla_[a-z_]+)="([^"]*)"')
_TARGET = re.compile(r"^\{([0-9,\s]+)\}x\{([0-9]+):([0-9]+)\}$")


class Unreadable(ValueError):
    """A megascale transfer whose attributes pmapviz does not read."""


@dataclass(frozen=True)
class Transfer:
    """One ``send`` or ``recv`` between slices, as the HLO has it."""

    kind: str  # 'send' or 'recv'
    name: str  # the HLO instruction
    line: int  # 1-based line in the HLO text
    shape_text: str  # 'f32[2048,8,128]': what each device sends (or receives)
    bytes: int  # per device
    transfer_type: str  # 'ALL_REDUCE'
    reduce_op: str  # 'SUM'
    rendezvous: str  # 'all-reduce.1_0': the send and recv of one exchange share it
    slices: tuple[int, ...]  # 0-based slices that take part
    partitions: tuple[int, ...]  # the devices of a slice (HLO numbers) that take part
    named: tuple[tuple[int, ...], ...] = ()  # or the device ids' groups (pairs) it names
    problem: str = ""  # why its target is not read ('' where it is)


def transfers(hlo: str) -> list[Transfer]:
    """Every megascale ``send``/``recv`` of an HLO text (``*-done`` lines left out)."""
    out = []
    for k, raw in enumerate(hlo.splitlines(), start=1):
        if HANDLER not in raw or (m := _LINE.match(raw)) is None:
            continue
        attrs = dict(_ATTR.findall(raw))
        if attrs.get("_xla_host_transfer_handler_name") != HANDLER:
            continue
        slices, parts, named, problem = (), (), (), ""
        target = target_text(raw)
        try:
            if target.startswith("{{"):
                named = read_named(target)
            else:
                slices, parts = read_target(target)
        except Unreadable as err:  # said in the report's unread lines, not raised
            problem = str(err)
        dims = tuple(int(d) for d in m["dims"].split(",") if d)
        count = 1
        for d in dims:
            count *= d
        out.append(
            Transfer(
                m["kind"],
                m["name"],
                k,
                f"{m['dtype']}[{m['dims']}]",
                count * DTYPE_BYTES.get(m["dtype"], 0),
                attrs.get("_xla_megascale_transfer_type", ""),
                attrs.get("_xla_megascale_reduce_operation", ""),
                attrs.get("_xla_host_transfer_rendezvous", ""),
                slices,
                parts,
                named,
                problem,
            )
        )
    return out


def target_text(raw: str) -> str:
    """The ``_xla_megascale_target`` value of an HLO line: quoted (``"{1,2}x{0:7}"``) or a
    braced list (``{{100007->200000},...}``), '' where the line has none."""
    key = "_xla_megascale_target="
    at = raw.find(key)
    if at < 0:
        return ""
    rest = raw[at + len(key) :]
    if rest.startswith('"'):
        return rest[1:].split('"', 1)[0]
    depth = 0
    for k, ch in enumerate(rest):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        if depth == 0:
            return rest[: k + 1]
    return ""


def read_named(text: str) -> tuple[tuple[int, ...], ...]:
    """``{{100007->200000},{200007->100000}}`` -> ((100007, 200000), (200007, 100000)), or
    ``{{100000,...,200007}}`` -> one group of those device ids; Unreadable otherwise."""
    body = text.replace(" ", "")
    if not (body.startswith("{{") and body.endswith("}}")):
        raise Unreadable(f"a megascale target pmapviz does not read: {text[:60]!r}")
    out = []
    for part in body[2:-2].split("},{"):
        ids = part.split("->") if "->" in part else part.split(",")
        if not all(i.isdigit() for i in ids) or ("->" in part and len(ids) != 2):
            raise Unreadable(f"a megascale target pmapviz does not read: {text[:60]!r}")
        out.append(tuple(int(i) for i in ids))
    return tuple(out)


def read_target(text: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """``{1,2}x{0:7}`` -> ((0, 1), (0, ..., 7)): the slices (numbered from 1 in the HLO) and
    each slice's devices that take part; Unreadable where the text is another form."""
    m = _TARGET.match(text.replace(" ", ""))
    if m is None:
        raise Unreadable(f"a megascale target pmapviz does not read: {text[:60]!r}")
    slices = tuple(int(s) - 1 for s in m[1].split(",") if s)
    lo, hi = int(m[2]), int(m[3])
    if min(slices, default=-1) < 0 or hi < lo:
        raise Unreadable(f"a megascale target pmapviz does not read: {text[:60]!r}")
    return slices, tuple(range(lo, hi + 1))


def groups(t: Transfer, slice_orders: Sequence[Sequence[int]]) -> tuple[tuple[int, ...], ...]:
    """The devices that exchange in ``t``, as device ids: for each partition k, device k of
    every slice named (``slice_orders[s][k]``: :meth:`Pod.slice_order`); or the groups (pairs)
    the target names by id."""
    if t.problem:
        raise Unreadable(t.problem)
    if t.named:
        known = {d for order in slice_orders for d in order}
        if any(d not in known for g in t.named for d in g):
            raise Unreadable(f"{t.name} names a device that is on none of the target's slices")
        return t.named
    if max(t.slices, default=0) >= len(slice_orders) or any(
        k >= len(slice_orders[s]) for s in t.slices for k in t.partitions
    ):
        raise Unreadable(
            f"{t.name} names slices {t.slices} x devices {t.partitions[0]}.."
            f"{t.partitions[-1]}, past the target's {len(slice_orders)} slices"
        )
    return tuple(tuple(slice_orders[s][k] for s in t.slices) for k in t.partitions)


def network(groups_: Sequence[Sequence[int]], slice_of: Mapping[int, int]) -> str:
    """'DCN' where a group's devices sit on more than one slice, else 'ICI'."""
    return DCN if any(len({slice_of[d] for d in g}) > 1 for g in groups_) else ICI


def bytes_moved(t: Transfer, slice_of: Mapping[int, int] | None = None) -> float:
    """Bytes each device sends over the data-center network for ``t`` (a model): an
    all-reduce over ``S`` slices sends ``2 (S-1)/S`` of its operand (reduce-scatter, then
    all-gather, between slices), an all-to-all whose group spans ``S`` slices the ``(S-1)/S``
    of its operand bound for the others (``slice_of``: each device's slice), anything else its
    operand once; a recv sends nothing."""
    if t.kind != "send":
        return 0.0
    s = len(t.slices)
    if t.transfer_type == "ALL_REDUCE":
        return 2 * (s - 1) / s * t.bytes if s > 1 else 0.0
    if t.transfer_type == "ALL_TO_ALL" and t.named and slice_of is not None:
        s = max(len({slice_of[d] for d in g}) for g in t.named)
        return (s - 1) / s * t.bytes
    return float(t.bytes)
