"""Pods: programs compiled by the real TPU compiler for TPU slices this machine does not have.

``libtpu`` (the ``pods`` extra) compiles for a named topology (``v5e:4x4``) on any Linux x86_64
machine, no chip needed. Everything shown comes from the compiled program (memory, cost, the
collectives and their groups); the time communication takes is a labelled model
(:mod:`~pmapviz.core.pods.commmodel`), since the compiler's estimate leaves it out.
"""
