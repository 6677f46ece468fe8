"""The features: one package per capability a user sees, each with its logic, its notebook
view (``show*``), its URL schema, its CLI command (``cmd_*``) and its ``ui/``.

A feature imports the core, itself, and the features before it in :data:`ORDER` (the tour
comes last: it tours them all); tests/test_floors.py reads a module's feature from its path.
:data:`ORDER` is also the menu's order: each feature that has a page declares it as ``PAGE``
in its ``__init__`` (:class:`pmapviz.core.base.pageinfo.PageInfo`), and
:mod:`pmapviz.app.page_registry` takes them in this order.
"""

ORDER = (
    "home",  # hello pmap: the first picture, read from the output's shards
    "explorer",  # pmap's settings planned: shapes, verdict, code
    "live",  # the explorer's settings run for real, and the seed's 10M-pair example
    "collectives",  # the collectives playground
    "timing",  # the Timing lab: pmap, shard_map, NamedSharding, vmap and the floor
    "training",  # data-parallel training
    "cluster",  # jax.distributed clusters
    "compiled",  # what XLA made: collectives, memory, cost, timelines
    "meshes",  # named meshes, PartitionSpecs, and the explorer's plan as shard_map
    "smap",  # after pmap: the explorer's settings as JAX runs pmap, and as jax.smap beside it
    "pods",  # programs compiled by the TPU compiler for slices this machine does not have
    "types",  # the typed program in Auto, Explicit and Manual modes; sharding conflicts
    "exercises",  # the room's pace: exercises judged against JAX, counted; lessons to replay
    "tour",  # the guided tour over all of them
)
