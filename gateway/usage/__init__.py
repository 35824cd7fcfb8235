"""Seeing and steering what model calls cost: ``/usage`` and ``/budget``, ``corvid usage``, the
control page's Usage page, and the wiring of the ledger and the budget."""
