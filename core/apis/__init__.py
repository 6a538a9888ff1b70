"""The wire APIs streamtool speaks: one package each.

A package holds everything about its API: ``API``, its row (:class:`~streamtool.core.plugins.
wire_api.WireApi`: routes, names, where the model is, official host and key variables, error
shape; data, kept in the package's manifest ``api.json`` and read by
:meth:`~streamtool.core.plugins.wire_api.WireApi.from_package`), and its parts, each a module of
the package: ``decoder`` (the converter that reads its streams), ``encoder`` (writes a meaning as
its stream), ``request`` (builds and reads its requests), ``mutations`` and ``faults``. What an
API can do is which parts its package has.

The packages are registered in the ``streamtool.apis`` entry-point group; a plugin's package
registered there is an API like these (:mod:`streamtool.core.plugins`).
"""
