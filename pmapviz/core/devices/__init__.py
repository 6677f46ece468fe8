"""What the devices are (measured on them), how fast they run, and how JAX starts in this
process."""
