"""After pmap, beside it: the explorer's settings as JAX 0.10 runs a pmap (``jit`` of
``shard_map``: squeeze, f, broadcast) and as ``jax.smap``, pmap's successor, on a one-axis mesh
under ``jax.set_mesh``: each device's block beside pmap's slice, the outputs checked against
pmap and ``jit(vmap)``, and where they part, JAX's own words and a fix that runs."""
