"""``streamtool samples``: the sample recordings installed with streamtool."""

import sys
from typing import Annotated

import typer

from streamtool.core.plugins import find_api
from streamtool.core.recording.reader import Source
from streamtool.core.samples import SAMPLES, Sample

from .main import app


@app.command()
def samples(
    paths: Annotated[
        bool, typer.Option("--paths", help="Print each sample's installed file instead.")
    ] = False,
) -> None:
    """List the sample recordings installed with streamtool (replay one with --sample NAME)."""
    out = sys.stdout
    if paths:
        for sample in SAMPLES.values():
            out.write(f"{sample.name}\t{sample.path}\n")
        return
    width = max(len(name) for name in SAMPLES)
    apis = {name: _api(sample) for name, sample in SAMPLES.items()}
    api_width = max(len(api) for api in apis.values())
    for sample in SAMPLES.values():
        out.write(f"{sample.name:<{width}}  {apis[sample.name]:<{api_width}}  {sample.about}\n")
    out.write(
        "\nstreamtool replay --sample NAME      the live tree of one"
        "\nstreamtool demo                      serve, record and replay one, offline\n"
    )


def _api(sample: Sample) -> str:
    """The API a sample's recording names in its header (its table id)."""
    with Source(sample.path) as source:
        api = find_api(str(source.header.api or ""))
    return api.id if api is not None else "?"
