"""What model calls cost: the ledger in ``state/usage.sqlite``, the price table, the caps."""
