"""Data-parallel training: the page's form and its loss curves."""
