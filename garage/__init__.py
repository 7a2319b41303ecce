"""Garage: a private, local index of one person's digital life.

This package is the Dagster-free library: every pipeline stage lives here as plain, importable
modules. The Dagster assets in ``garage_assets`` are thin wrappers over it.
"""

__version__ = "0.1.0"
