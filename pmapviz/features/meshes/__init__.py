"""Named meshes: your own f both ways, and pmap's settings as shard_map."""
