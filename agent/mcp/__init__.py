"""Model Context Protocol servers: the client of one, the hub of all, and what passes between."""
