"""Tools the model may call: the registry and the per-turn context, and the workspace file tools."""
