"""The collectives playground: before and after on every device."""
