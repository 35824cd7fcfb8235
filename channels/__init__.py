"""Chat platform adapters. Each imports only ``gateway.contract.events`` from the rest of Corvid."""
