"""What XLA planned for the memory of a compiled (never run) program, from its
``memory_analysis()``: each device's argument, output, temporary and code bytes
(:func:`device_memory`), its :class:`Footprint`, and the
:class:`pmapviz.core.budgets.memorymodel.Need` of
programs run one after the other (:func:`compiled_need`), read before any input exists.
"""

from __future__ import annotations

from dataclasses import dataclass

from pmapviz.core.budgets.memorymodel import OVERHEAD, Need


# ---------------------------------------------------------------- from a compiled program
@dataclass(frozen=True)
class Footprint:
    """What XLA planned for ONE device while a compiled program runs, from its
    ``memory_analysis()``: the argument buffers, the output buffers, the scratch memory
    (temporaries) and the outputs that reuse (alias) a donated argument's buffer.

    For a pmap executable the figures are per device. Measured on CPU (JAX 0.10.2, 8 emulated
    devices), a pmapped collective over an (n, m) float32 input: ``argument_size_in_bytes`` is
    4 m (one device's block, not the n m of the whole input) for n = 1, 2 and 8;
    ``output_size_in_bytes`` 4 m for psum and ppermute, 4 n m for all_gather (tiled or not);
    ``temp_size_in_bytes`` 0 except all_to_all (about 7.5 MB at n = 8, m = 1,000,000). The
    whole program holds n times each figure. A jit executable on one device reports that one
    device's buffers, i.e. everything."""

    arguments: int
    outputs: int
    temporaries: int
    aliased: int = 0

    @property
    def held(self) -> int:
        """Arguments and outputs: buffers alive for as long as the caller keeps them."""
        return max(0, self.arguments + self.outputs - self.aliased)


def footprint(executable) -> Footprint | None:
    """The ``memory_analysis()`` of a compiled (never run) executable, or None where the
    backend gives none."""
    try:
        stats = executable.memory_analysis()
    except Exception:  # noqa: BLE001 - a backend without the analysis: no figure, not a crash
        return None
    if stats is None:
        return None

    def get(name: str) -> int:
        return max(0, int(getattr(stats, name, 0) or 0))

    return Footprint(
        get("argument_size_in_bytes"),
        get("output_size_in_bytes"),
        get("temp_size_in_bytes"),
        get("alias_size_in_bytes"),
    )


def compiled_need(runs, host: int = 0, overhead: int = OVERHEAD) -> Need | None:
    """The Need of compiled executables run one after the other, each ``(executable,
    devices)`` (a pmap executable's figures are per device: times its devices), read before
    any input exists: every program's arguments and outputs (the caller keeps them), plus the
    largest program's temporaries (they live only while it runs), on the devices; plus
    ``host`` bytes of host copies (inputs made on the host, results read back, numpy's
    reference) and a fixed ``overhead`` for the runtime. None when no executable has an
    analysis (keep the formula then)."""
    prints = [
        (fp, max(1, int(d))) for fp, d in ((footprint(ex), d) for ex, d in runs) if fp is not None
    ]
    if not prints:
        return None
    held = sum(d * fp.held for fp, d in prints)
    temps = max(d * fp.temporaries for fp, d in prints)
    device = held + temps
    return Need(host + device + overhead, host + overhead, device)


MEMORY_PARTS = (
    ("arguments", "argument_size_in_bytes"),
    ("output", "output_size_in_bytes"),
    ("temporaries", "temp_size_in_bytes"),
    ("code", "generated_code_size_in_bytes"),
)


def device_memory(compiled) -> tuple[tuple[str, int], ...]:
    """What each device holds for a compiled SPMD program, from XLA's own plan
    (``compiled.memory_analysis()``): its block of the arguments, of the output, its
    temporaries and code, in bytes. Empty when the backend gives no analysis."""
    try:
        stats = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError):  # some backends have none
        return ()
    if stats is None:
        return ()
    return tuple((label, int(getattr(stats, attr, 0) or 0)) for label, attr in MEMORY_PARTS)
