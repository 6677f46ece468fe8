"""Real runs: pmap compiled ahead of time and checked against jit(vmap), your own f in a sandbox,
and what XLA made of a program.
"""
