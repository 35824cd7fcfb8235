"""The model port, its Anthropic implementation, and the Messages API's wire format."""
