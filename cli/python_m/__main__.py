"""``python -m streamtool`` runs the ``streamtool`` command.

This folder is the package ``streamtool`` itself (pyproject.toml's ``package-dir``): it holds
only this file, beside ``streamtool.core`` and ``streamtool.cli``.
"""

from streamtool.cli.main import main

main()
