"""Multi-process: a local jax.distributed cluster, real clusters' launch lines and reports."""
