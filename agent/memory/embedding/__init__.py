"""Embeddings for memory search: the port, the provider a configuration asks for, the providers."""
