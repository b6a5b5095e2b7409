"""Files graphmem installs into agent clients (``opencode/graphmem.js``: the OpenCode plugin).

Data, not Python: ``adapters/opencode_config.py`` reads them with ``importlib.resources``.
"""
