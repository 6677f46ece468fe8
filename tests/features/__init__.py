"""The features' tests, a package: so that a feature named like a standard module
(tests/features/types/) is imported as tests.features.types, never as Python's own ``types``."""
