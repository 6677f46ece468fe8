"""pmapviz: understand and check ``jax.pmap``.

Importing this package does not import JAX: the device count must be fixed first
(see :mod:`pmapviz.devices`).
"""

__version__ = "0.1.0"
