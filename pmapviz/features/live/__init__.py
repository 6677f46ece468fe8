"""Live outputs: the explorer's settings run for real, and the seed's 10M-pair example."""
