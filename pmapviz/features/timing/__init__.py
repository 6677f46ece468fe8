"""The Timing lab: pmap, shard_map and NamedSharding against vmap and the floor."""
