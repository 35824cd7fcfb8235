"""The gateway: message types, configuration, routing, chat commands and the CLI."""
