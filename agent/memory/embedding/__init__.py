"""Embeddings for memory search: the port (``base.py``), the provider a configuration asks
for (``factory.py``), and the providers: a local model (``local.py``) or an OpenAI-compatible
service (``openai.py``)."""
