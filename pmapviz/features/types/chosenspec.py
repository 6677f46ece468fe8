"""The sharding XLA chose for a value, as a PartitionSpec on the program's mesh, read by JAX.

An HLO sharding (``{devices=[4,2]<=[8] last_tile_dim_replicate}``) is parsed by XLA's own
``HloSharding.from_string`` and turned into PartitionSpecs by JAX's
``parse_flatten_op_sharding``, the function JAX itself uses to read a compiled program's
shardings back; the answer is kept only when ``NamedSharding(mesh, spec)`` gives the very same
HLO sharding back (JAX's ``are_hlo_shardings_equal``). Otherwise (a device order no
PartitionSpec on this mesh makes, a maximal or manual sharding) the HLO text itself is shown.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from pmapviz.features.meshes.meshspecs import spec_text


@dataclass(frozen=True)
class Chosen:
    """What XLA chose for one value: a PartitionSpec's text (``spec``), or the HLO sharding
    as written (``hlo``) where no PartitionSpec on the mesh says it."""

    hlo: str
    spec: str | None

    @property
    def text(self) -> str:
        """The PartitionSpec where there is one, else the HLO sharding."""
        return self.spec if self.spec is not None else self.hlo

    @property
    def axes(self) -> tuple[str, ...]:
        """The mesh axes this value is split over (none when replicated or unread)."""
        if self.spec is None:
            return ()
        return tuple(a for a in _names(self.spec))


def _names(spec_words: str) -> list[str]:
    return re.findall(r"'([A-Za-z_][A-Za-z0-9_]*)'", spec_words)


@functools.lru_cache(maxsize=1024)
def read(hlo: str, mesh, rank: int) -> Chosen:
    """``hlo`` (an HLO sharding's text) on ``mesh`` (a jax Mesh) for a value of ``rank``
    dimensions."""
    try:
        from jax._src import sharding_impls  # private: how JAX reads compiled shardings back
        from jax._src.lib import xla_client
        from jax.sharding import NamedSharding

        parsed = xla_client.HloSharding.from_string(hlo)
        specs = sharding_impls.parse_flatten_op_sharding(parsed, mesh)
        if len(specs) != 1:
            return Chosen(hlo, None)
        spec = specs[0]
        again = NamedSharding(mesh, spec)._to_xla_hlo_sharding(rank)
        if not sharding_impls.are_hlo_shardings_equal(again, parsed):
            return Chosen(hlo, None)
    except Exception:  # noqa: BLE001 - what JAX cannot read is shown as XLA wrote it
        return Chosen(hlo, None)
    entries = tuple(spec) + (None,) * max(0, rank - len(spec))
    return Chosen(hlo, spec_text(entries))
