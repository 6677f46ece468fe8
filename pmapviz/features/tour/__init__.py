"""The guided tour: ten steps over every feature (the last feature: it may use all the others)."""
