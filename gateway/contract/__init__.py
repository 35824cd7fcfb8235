"""The contract: the values every part speaks (messages, keys, errors, ports); the atomic write."""
