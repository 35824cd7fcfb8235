"""Infrastructure every part of Corvid may use: leaves that import nothing of Corvid's."""
