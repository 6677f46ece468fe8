"""The shared core: what every feature stands on, one package per floor.

A module imports from its own package or from the packages before it in :data:`FLOORS` (and never
from :mod:`pmapviz.features` or :mod:`pmapviz.app`); tests/test_architecture.py reads each module's
floor from its path. Nothing here imports Streamlit except :mod:`.ui`, and nothing imports JAX at
module level.
"""

FLOORS = (
    "base",  # values, text, settings, paths, fair locks: no JAX, no devices
    "devices",  # what the devices are, how fast, how JAX starts in this process
    "expressions",  # the functions a user can pmap, "your own f", the collectives' records
    "xla",  # what XLA and the profiler wrote: HLO text, traces, timelines
    "planning",  # what pmap will do with given shapes, and where each slice goes
    "budgets",  # memory and time: estimates, the server's pool, refusals
    "running",  # real runs: compiled ahead of time, checked, sandboxed, analysed
    "pods",  # programs compiled by libtpu for TPU slices this machine does not have
    "drawing",  # pictures and notebook views, without Streamlit
    "ui",  # the Streamlit frame and components every page shares
)
