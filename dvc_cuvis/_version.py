"""The package version, in a leaf of its own: modules that record it import nothing else."""

__version__ = "0.1.0"
