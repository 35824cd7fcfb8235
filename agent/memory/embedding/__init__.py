"""Embeddings for memory search: turning text into vectors, locally or through a provider."""
