"""The control page: a small web app that ``corvid run`` serves from its own event loop."""
