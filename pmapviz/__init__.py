"""pmapviz: understand and check ``jax.pmap``.

Public API (thin; the internals live in one module per concept):

- :func:`pmapviz.plan` -- what pmap will do with given shapes, validated, from shapes alone.

Importing this package does not import JAX: the device count must be fixed first
(see :mod:`pmapviz.devicesetup`). ``plan`` imports JAX on first use.
"""

from typing import Any

__version__ = "0.1.0"
__all__ = ["plan"]


def __getattr__(name: str) -> Any:
    if name == "plan":
        from pmapviz.planning import plan

        return plan
    raise AttributeError(f"module 'pmapviz' has no attribute {name!r}")
