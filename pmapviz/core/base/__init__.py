"""The core's bottom floor: values and their parsers, text, settings and URL schemas' machinery,
paths, fair locks and the heavy imports. No JAX, no devices.
"""
