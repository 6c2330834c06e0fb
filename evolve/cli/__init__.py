"""The ``memevo`` command line: the command table, each command's module, help pages and the UI server."""
