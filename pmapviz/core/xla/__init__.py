"""What XLA and the profiler wrote, read as text: HLO collectives, trace files and events, per-
device timelines.
"""
