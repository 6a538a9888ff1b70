"""``streamtool demo``: streamtool shown off in a few seconds, offline, from any folder.

It serves a sample recording with the real server on 127.0.0.1 (as ``streamtool serve`` does),
records it through the real HTTP path (as ``streamtool record`` does, with the live tree drawn
while the bytes arrive), checks that the new recording replays to the same meaning as the
sample, and prints the next commands to try. No key and no network beyond 127.0.0.1.
"""

import json
import shlex
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlsplit

import typer

from streamtool.core.samples import DEFAULT_SAMPLE, UnknownSample, get_sample

from .choices import complete_sample
from .errors import fail, user_errors
from .main import app
from .params import no_color_option

if TYPE_CHECKING:
    from streamtool.core.exchange.requests import PreparedRequest

# request headers a replayed request keeps (credentials and transport headers are not resent),
# besides those the official SDKs send to say how to read the request
_KEEP_HEADERS = ("content-type", "accept")


def replay_request(sample_path: Path, origin: str) -> "PreparedRequest":
    """The request the sample recorded, sent to ``origin`` instead of the provider."""
    from streamtool.core.exchange.requests import PreparedRequest
    from streamtool.core.plugins import api_table
    from streamtool.core.plugins.table import default_api
    from streamtool.core.recording.reader import Source

    with Source(sample_path) as source:
        header = source.header
    request = header.request
    default = default_api()  # a header that does not say: the API a plain request is taken for
    parts = urlsplit(str(request.get("url") or default.official_path))
    url = origin + parts.path + (f"?{parts.query}" if parts.query else "")
    sent = {str(k).lower(): str(v) for k, v in (request.get("headers") or {}).items()}
    keep = dict.fromkeys((*_KEEP_HEADERS, *(h for a in api_table() for h in a.sdk_headers)))
    headers = {name: sent[name] for name in keep if name in sent}
    headers.setdefault("content-type", "application/json")
    body = request.get("body")
    content = json.dumps(body, ensure_ascii=False).encode() if body is not None else b""
    return PreparedRequest(
        method=str(request.get("method") or "POST"),
        url=url,
        headers=headers,
        content=content,
        body=body,
        provider=header.provider or default.provider,
        api=header.api or default.name,
        model=header.model,
    )


@app.command()
def demo(
    sample: Annotated[
        str,
        typer.Option(
            "--sample",
            autocompletion=complete_sample,
            metavar="NAME",
            help=f"The sample to play (default: {DEFAULT_SAMPLE}; streamtool samples lists them).",
        ),
    ] = DEFAULT_SAMPLE,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Keep the new recording here (default: a new temporary folder).",
        ),
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --output.")] = False,
    speed: Annotated[
        str,
        typer.Option("--speed", help="Serve at the recorded pace (1), N times faster, or max."),
    ] = "1",
    no_color: Annotated[bool, no_color_option()] = False,
) -> None:
    """Serve a sample on 127.0.0.1, record it over real HTTP while the live tree draws it, and
    print the commands to try next. Offline; no key needed."""
    try:
        _demo(sample, output, speed, no_color, force)
    except KeyboardInterrupt:
        _interrupted(None)


def _interrupted(output: Path | None) -> None:
    """Ctrl-C: one line (naming what was kept) and exit 130."""
    kept = (
        f"; the recording so far is in {output}" if output is not None and output.exists() else ""
    )
    import sys

    sys.stderr.write(f"streamtool: demo interrupted{kept}\n")
    raise typer.Exit(130)


def _demo(sample: str, output: Path | None, speed: str, no_color: bool, force: bool) -> None:
    try:
        chosen = get_sample(sample)
    except UnknownSample as exc:
        fail(str(exc))
    from streamtool.core.exchange.playback import Playback
    from streamtool.core.model.speed import parse_speed
    from streamtool.core.recording.recorder import check_output

    try:
        playback = Playback(speed=parse_speed(speed), max_gap=2.0)
    except ValueError as exc:
        fail(f"--speed: {exc}")
    if output is None:
        output = Path(tempfile.mkdtemp(prefix="streamtool-demo-")) / f"demo-{chosen.name}.jsonl"
    with user_errors(str(output)):
        check_output(output, force=force)

    from streamtool.core.net.http_capture import record_request
    from streamtool.core.net.library import Library
    from streamtool.core.net.listen import ServerThread
    from streamtool.core.net.service import ServiceConfig, build_service

    from .record import LiveFeed, TreeView
    from .tree import make_live_sink

    say = _Say(no_color)
    say.step(f"1/3 serving the sample {chosen.name!r} ({chosen.about}) on 127.0.0.1")
    with user_errors(str(chosen.path)):
        library = Library.from_paths([chosen.path])
    service = build_service(library, ServiceConfig(playback=playback))
    with ServerThread(service.app) as server:
        prepared = replay_request(chosen.path, server.url)
        say.step(f"2/3 recording {prepared.method} {prepared.url} -> {output}")
        view = TreeView(make_live_sink(no_color=no_color))  # the record view, on stdout
        live = LiveFeed(
            prepared, view, converter="auto", parser="api_tool_call", source=str(output)
        )
        with user_errors(str(output)):
            result = record_request(
                prepared, output, force=force, on_start=live.on_start, on_chunk=live.on_chunk
            )
        live.finish(result)
    if result.reason == "interrupted":
        _interrupted(output)
    if result.status is None:
        fail(f"the demo server did not answer: {result.error or result.reason}", code=1)
    say.step(f"3/3 {_check_same(chosen.path, output)}")
    _next_steps(say, chosen.name, chosen.path, output)


def _check_same(sample_path: Path, output: Path) -> str:
    """Replay both files: the recording made over HTTP means what the sample means."""
    from streamtool.core.drive.replay_file import replay_file
    from streamtool.core.outputs.diff import diff_streams

    with user_errors(str(output)):
        result = diff_streams(
            replay_file(sample_path, transcript=True), replay_file(output, transcript=True)
        )
    if result.same_meaning:
        return "the new recording replays to the same text, tool calls and errors as the sample"
    return "the new recording differs from the sample: " + ", ".join(result.differences)


def _next_steps(say: "_Say", name: str, sample_path: Path, output: Path) -> None:
    rec = shlex.quote(str(output))
    lines = [
        ("streamtool samples", "the other samples"),
        (f"streamtool replay {rec}", "the new recording as the live tree, at its recorded pace"),
        (f"streamtool replay --sample {name} --format json", "the summary scripts read"),
        (
            f"streamtool diff {rec} --parser-a api_tool_call --parser-b passthrough",
            "one recording through two parsers",
        ),
        (f"streamtool serve {shlex.quote(str(sample_path))}", "serve it to your own client"),
        (
            'streamtool record -p openai-chat -m gpt-4o --prompt "..." -o mine.jsonl',
            "a real stream (needs OPENAI_API_KEY)",
        ),
    ]
    say.step("next, try:")
    for command, why in lines:
        say.line(f"  {command}", why)


class _Say:
    """The demo's own lines: bold steps, dim comments (plain off a terminal or with NO_COLOR)."""

    def __init__(self, no_color: bool) -> None:
        from .tree import make_console

        self.console: Any = make_console(no_color=no_color)

    def step(self, text: str) -> None:
        from rich.text import Text

        self.console.print(Text(text, style="bold"), soft_wrap=True)

    def line(self, command: str, why: str) -> None:
        from rich.text import Text

        out = Text(command)
        if why:
            out.append(f"    # {why}", style="dim")
        self.console.print(out, soft_wrap=True)
