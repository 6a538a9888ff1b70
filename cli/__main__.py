"""``python -m streamtool.cli`` runs the ``streamtool`` command."""

from streamtool.cli.main import main

main()
