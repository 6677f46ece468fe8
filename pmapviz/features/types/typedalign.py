"""One grid row per equation across the modes: the modes' equation lists lined up where they
are the same equation of the program (the same primitive at the same source position), so an
equation's three types sit side by side; an equation only one mode has (Manual's
``shard_map``, its squeeze, a ``pvary``) gets a row of its own. Python's ``difflib`` lines
them up; nothing is dropped or reordered within a mode.
"""

from __future__ import annotations

import difflib
from collections.abc import Hashable, Mapping, Sequence

Slot = dict[str, int]  # mode -> index of its row in that mode's list


def align(columns: Mapping[str, Sequence[Hashable]]) -> list[Slot]:
    """Rows for ``columns`` (mode -> the keys of its rows, in order): each row maps the modes
    that have it to their row's index; every mode's rows appear once, in their order."""
    slots: list[Slot] = []
    owner: list[Hashable] = []  # the key of each slot (its first mode's)
    for mode, keys in columns.items():
        if not slots:
            slots = [{mode: k} for k in range(len(keys))]
            owner = list(keys)
            continue
        matcher = difflib.SequenceMatcher(None, owner, list(keys), autojunk=False)
        new_slots: list[Slot] = []
        new_owner: list[Hashable] = []
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            if tag == "equal":
                for a, b in zip(range(i1, i2), range(j1, j2), strict=True):
                    slots[a][mode] = b
            new_slots += slots[i1:i2]
            new_owner += owner[i1:i2]
            if tag != "equal":
                new_slots += [{mode: b} for b in range(j1, j2)]
                new_owner += list(keys[j1:j2])
        slots, owner = new_slots, new_owner
    return slots
