"""The Pods page's settings and the ``pod`` command's programs: which program, which slice,
which batch, and which generation to sweep; its URL schema."""

from __future__ import annotations

from pmapviz.core.base import settings
from pmapviz.core.pods import podprograms, podtarget, tpuchips
from pmapviz.core.pods.podprograms import PodProgram

PROGRAMS = {
    "train": "Data-parallel training step",
    "dot": "The seed's 10M dot products",
    "psum": "lax.psum of 64 MiB a chip",
}


def program_label(key: str) -> str:
    """What a program's key means, for its widgets ('psum' -> 'lax.psum of 64 MiB a chip')."""
    return PROGRAMS.get(key, key)


# several slices over the data-center network, offered beside the single slices
MULTISLICE = podtarget.MULTISLICE
# hosts as rented where Cloud rents a slice two ways (libtpu's default is the plain name)
RENTED = ("v5e:2x4 on 8-chip hosts", "v5e:4x4 on 8-chip hosts")
SLICE_COUNTS = (1, 2, 4, 8)  # the slice sweep: 1 to 8 slices of SWEPT_SLICE
SWEPT_SLICE = "v5e:4x4"
MAX_BATCH = 10**12  # abstract shapes: nothing is allocated, the compiler says what fits


def schema(n_devices: int) -> settings.Schema:
    """The Pods page: pod (the slice, or several slices: '2 x v5e:4x4'), prog (a collective
    on the slice first: quick to compile and drawn on its chips), batch (0: the program's
    own), and the sweep's gen and sprog (a training step: how a step scales)."""
    return settings.Schema(
        (
            podtarget.pod_field(tpuchips.DEFAULT, multislice=True),
            settings.choice_field("prog", "Program", tuple(PROGRAMS), "psum"),
            settings.int_field("batch", "Batch", 0, MAX_BATCH, 0),
            settings.choice_field("gen", "Generation", tuple(tpuchips.GENERATIONS), "v5e"),
            settings.choice_field("sprog", "The sweep's program", tuple(PROGRAMS), "train"),
        )
    )


def program(key: str, batch: int = 0) -> PodProgram:
    """A built-in program by key, at ``batch`` (0: its own; psum has none)."""
    prog = podprograms.BUILTIN[key]()
    return prog.at_batch(batch) if batch and prog.batch is not None else prog
