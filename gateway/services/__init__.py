"""What the running app offers besides chat: the control socket, status, logging and reload."""
