"""The explorer: shapes and sharding of pmap's settings, its presets and its verdicts."""
