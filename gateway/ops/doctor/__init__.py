"""``corvid doctor``: the checks of an installation, each saying how to fix what it finds."""
