"""Seeing and steering what model calls cost: ``/usage``, ``/budget``, the CLI, the Usage page."""
