"""What XLA planned for a compiled program's memory: each device's parts, its footprint, and
the need of programs run one after the other."""

import jax
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from pmapviz.core.budgets import compiledmemory, memorymodel
from pmapviz.features.meshes import meshplacement
from pmapviz.features.meshes.meshspecs import Mesh

MESH = Mesh((2, 4), ("data", "model"))


# ---------------------------------------------------------------- from a compiled program
class _Stats:
    def __init__(self, arguments, outputs, temps, alias=0):
        self.argument_size_in_bytes, self.output_size_in_bytes = arguments, outputs
        self.temp_size_in_bytes, self.alias_size_in_bytes = temps, alias


class _Executable:
    def __init__(self, stats):
        self.stats = stats

    def memory_analysis(self):
        if isinstance(self.stats, Exception):
            raise self.stats
        return self.stats


def test_a_footprint_is_what_memory_analysis_says_and_none_without_one():
    fp = compiledmemory.footprint(_Executable(_Stats(100, 50, 30, 20)))
    assert fp == compiledmemory.Footprint(100, 50, 30, 20) and fp.held == 130
    assert compiledmemory.footprint(_Executable(NotImplementedError("no analysis"))) is None
    assert compiledmemory.footprint(_Executable(None)) is None


def test_compiled_need_counts_every_programs_buffers_and_the_largest_temporaries():
    """A pmap's figures are per device (times its devices); the programs run one after the
    other, so their arguments and outputs add up and only the largest scratch counts."""
    pmapped, single = _Executable(_Stats(100, 50, 30)), _Executable(_Stats(200, 10, 500))
    need = compiledmemory.compiled_need([(pmapped, 4), (single, 1)], host=7, overhead=11)
    device = 4 * 150 + 210 + 500
    assert need == memorymodel.Need(7 + device + 11, 18, device)
    wide = compiledmemory.compiled_need([(_Executable(_Stats(100, 50, 300)), 4), (single, 1)], 0, 0)
    assert wide.device == 4 * 150 + 210 + 4 * 300  # now the pmap's scratch is the larger
    assert compiledmemory.compiled_need([(_Executable(None), 4)], 7) is None


def test_device_memory_is_xla_s_plan_or_nothing_where_the_backend_has_none():
    class NoAnalysis:
        def memory_analysis(self):
            raise NotImplementedError

    class NoneAnalysis:
        def memory_analysis(self):
            return None

    assert (
        compiledmemory.device_memory(NoAnalysis())
        == ()
        == compiledmemory.device_memory(NoneAnalysis())
    )
    m = meshplacement.jax_mesh(MESH, jax.devices()[:8])
    x = jax.ShapeDtypeStruct((8, 16), np.float32, sharding=NamedSharding(m, P("data", "model")))
    compiled = jax.jit(lambda a: a * 2).lower(x).compile()
    parts = dict(compiledmemory.device_memory(compiled))
    assert parts["arguments"] == parts["output"] == 4 * 4 * 4  # each device's (4, 4) block
