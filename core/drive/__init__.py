"""The pipeline driven over files on disk: replay a file (:mod:`.replay_file`), check golden
files (:mod:`.check`), list recordings (:mod:`.listing`, :mod:`.find`) and inspect one
(:mod:`.inspect_file`).

These sit above both :mod:`streamtool.core.recording` (the files) and
:mod:`streamtool.core.outputs` (what a replay produces), and below :mod:`streamtool.core.net`.
"""
