"""Backing up a home, and restoring one: ``corvid backup`` and ``corvid restore``."""
