"""``streamtool completion SHELL``: print the shell's completion script."""

import sys
from enum import StrEnum
from typing import Annotated

import typer

from .main import COMPLETE_VAR, app

PROG = "streamtool"


class Shell(StrEnum):
    bash = "bash"
    zsh = "zsh"
    fish = "fish"
    powershell = "powershell"


@app.command()
def completion(
    shell: Annotated[Shell, typer.Argument(help="The shell to complete in.", metavar="SHELL")],
) -> None:
    """Print the shell completion script for bash, zsh, fish or powershell.

    Load it in the current shell with: eval "$(streamtool completion bash)"; for every new
    shell, add that line to ~/.bashrc (zsh: ~/.zshrc; fish: streamtool completion fish >
    ~/.config/fish/completions/streamtool.fish).
    """
    from typer.completion import completion_init, get_completion_script

    completion_init()
    script = get_completion_script(prog_name=PROG, complete_var=COMPLETE_VAR, shell=shell.value)
    sys.stdout.write(script + "\n")
