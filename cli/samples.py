"""``streamtool samples``: the sample recordings installed with streamtool."""

import sys
from typing import Annotated

import typer

from streamtool.core.samples import SAMPLES

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
    api_width = max(len(s.api) for s in SAMPLES.values())
    for sample in SAMPLES.values():
        out.write(f"{sample.name:<{width}}  {sample.api:<{api_width}}  {sample.about}\n")
    out.write(
        "\nstreamtool replay --sample NAME      the live tree of one"
        "\nstreamtool demo                      serve, record and replay one, offline\n"
    )
