"""An mkdocs hook: mkdocstrings finds streamtool's sources whatever the install.

The package ``streamtool`` is this project's root folder: ``core/`` and ``cli/`` install as
``streamtool.core`` and ``streamtool.cli`` (``[tool.setuptools] package-dir``). No folder on disk
is named ``streamtool``, and setuptools' default editable install (``pip install -e .``) maps
the two packages through an import hook that static analysis cannot follow, so the Python API
page would find nothing. Before the build, a folder named ``streamtool`` holding ``core`` and
``cli`` (links to the sources, or a copy where links cannot be made) is put first on the search
path mkdocstrings reads (``sys.path``, which it takes when it reads its configuration).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

PACKAGES = ("core", "cli")


def on_startup(command: str, dirty: bool) -> None:
    """Before any plugin reads its configuration (mkdocstrings fixes its search path there)."""
    root = Path(__file__).resolve().parents[2]  # docs/hooks/sources.py: the project's root
    tree = Path(tempfile.mkdtemp(prefix="streamtool-docs-"))
    atexit.register(shutil.rmtree, tree, True)
    package = tree / "streamtool"
    package.mkdir()
    for name in PACKAGES:
        try:
            os.symlink(root / name, package / name, target_is_directory=True)
        except OSError:  # no links here (Windows without the privilege): a copy reads the same
            shutil.copytree(root / name, package / name)
    sys.path.insert(0, str(tree))
