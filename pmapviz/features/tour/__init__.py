"""The guided tour: thirteen steps over every feature (the one feature that imports others)."""
