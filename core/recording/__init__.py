"""Recordings on disk: the reader (:mod:`.reader`), the writers (:mod:`.writer`, :mod:`.recorder`),
secret scrubbing (:mod:`.secrets`) and a tape's index (:mod:`.tape_index`).

The pure record types these files hold live below the pipeline, in
:mod:`streamtool.core.model.records`; what drives the pipeline over files (replay a file, check
golden files, list, inspect) lives in :mod:`streamtool.core.drive`.
"""
