"""The Compiled program page: the program picker and profiler timelines."""
