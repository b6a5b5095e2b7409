"""The ``graphmem`` command line: parse, call the Memory service, present.

Nothing here imports the store, the model or the MCP server at import time, so
``graphmem --help`` stays fast: commands import ``graphmem.app`` when they run.
"""
