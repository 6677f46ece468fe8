"""What each device holds of a ``jax.Array``, read from the array itself, and a host array
placed split over devices.

``addressable_shards`` gives, per device, the device, the slice of the global array it holds
(``index``) and the data itself: every block a page shows comes from there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from pmapviz.core.planning.pmapplacement import index_text


@dataclass(frozen=True)
class Shard:
    """One device's piece of a global ``jax.Array``."""

    device: str  # "cpu:3"
    device_id: int
    position: int  # index of the device in the mesh (colour index)
    index: tuple  # tuple of slices into the global array
    replica_id: int
    data: np.ndarray

    @property
    def index_text(self) -> str:
        """Its place in the global array as text: '[0:2, :]'."""
        return index_text(self.index)


def shards_of(array: Any) -> list[Shard]:
    """Per-device pieces of ``array``, ordered as the devices appear in its sharding's mesh."""
    order = {d.id: k for k, d in enumerate(_mesh_devices(array))}
    out = [
        Shard(
            device=str(s.device),
            device_id=s.device.id,
            position=order.get(s.device.id, s.device.id),
            index=tuple(s.index),
            replica_id=s.replica_id,
            data=np.asarray(s.data),
        )
        for s in array.addressable_shards
    ]
    return sorted(out, key=lambda s: (s.position, s.replica_id))


def _mesh_devices(array: Any) -> list:
    mesh = getattr(array.sharding, "mesh", None)
    if mesh is not None:
        return list(mesh.devices.flat)
    return sorted(array.sharding.device_set, key=lambda d: d.id)


def place_on_devices(x: np.ndarray, devices: list, axis_name: str = "i") -> Any:
    """Put ``x`` on ``jaxstartup`` split along its leading axis (today's replacement for
    ``device_put_sharded``: ``device_put`` with a ``NamedSharding``)."""
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    mesh = Mesh(np.array(devices), (axis_name,))
    return jax.device_put(x, NamedSharding(mesh, PartitionSpec(axis_name)))
