"""Embedding models for memory search: the port (``base.py``) and the providers behind it."""
