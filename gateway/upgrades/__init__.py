"""Carrying a home forward from an older Corvid: its config.yaml and its state files."""
