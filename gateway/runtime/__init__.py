"""The runtime: messages in, turns per session, replies out (gateway, router, journal, delivery)."""
