"""Garage's Dagster assets: thin wrappers over the ``garage`` library."""
