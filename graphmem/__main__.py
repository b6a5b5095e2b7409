"""``python -m graphmem`` runs the CLI."""

from graphmem.cli.main import main

main()
