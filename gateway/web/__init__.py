"""The control page: a small web app that ``corvid run`` serves from its own event loop.

It shows what the assistant is doing (channels, sessions, problems, undelivered messages), lets
the owner read and edit its memory, run and cancel jobs and answer pairing requests. Everything
it shows is private, so every request passes ``guard.Guard`` first: the access token, the
session cookie, the Host header and, for changes, the CSRF token.
"""
