"""Scheduled jobs: the scheduler and its ledger, the one plan, and what each kind of job does."""
