"""Chat platform adapters. Each imports only ``gateway.events`` from the rest of Corvid."""
