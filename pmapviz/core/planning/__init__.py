"""What ``jax.pmap`` will do with given shapes before anything runs, where each slice goes, and the
scenario that describes it.
"""
