"""``streamtool mutate REC --quirk ID -o OUT``: apply catalogue quirks to a real recording."""

import contextlib
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from .choices import complete_mutation
from .errors import fail, user_errors
from .main import app

if TYPE_CHECKING:
    from collections.abc import Callable

    from streamtool.core.model.records import End, Header
    from streamtool.core.mutations import Original


def parse_ids(values: list[str] | None) -> list[str]:
    """Quirk ids from repeated or comma-separated options; a bad one fails (exit 2) with
    the closest generatable ids."""
    from streamtool.core.mutations import not_generatable

    ids = [v.strip() for item in values or () for v in item.split(",") if v.strip()]
    for qid in ids:
        refusal = not_generatable(qid)
        if refusal is not None:
            fail(f"{refusal} (streamtool mutate REC --list shows them)")
    return ids


def load_original(path: Path) -> "Original":
    """A recording read and replayed once (one clear line on unusable input)."""
    from streamtool.core.engine.replay import DetectionError
    from streamtool.core.mutations import analyse, analyse_session
    from streamtool.core.recording.reader import Source

    with user_errors(str(path)):
        source = Source(path)
        try:
            if source.websocket:
                records = list(source.session_records())
                return analyse_session(source.header, records, source.end)
            chunks = list(source.chunks())
            return analyse(source.header, chunks, source.end)
        except DetectionError as exc:
            fail(f"{path}: {exc}")


@app.command()
def mutate(
    recording: Annotated[Path, typer.Argument(help="The recording to start from.")],
    quirk: Annotated[
        list[str] | None,
        typer.Option(
            "--quirk",
            "-q",
            autocompletion=complete_mutation,
            help="A quirk id to apply (repeatable, or ID,ID).",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Where to write the new recording (- for stdout)."),
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the quirks that can be applied to RECORDING.")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite OUTPUT if it exists.")] = False,
) -> None:
    """Write a new recording in which each quirk is applied to the real stream at the wire
    level: the other events, the read boundaries and their times are kept as far as the quirk
    allows. Replaying the result reports each quirk applied. Exit codes: 0 written, 2 unusable
    input (a quirk id that is not generatable, or that does not apply to RECORDING)."""
    from streamtool.core.mutations import NotApplicable, apply, apply_session

    ids = parse_ids(quirk)
    if recording.is_dir():  # a recorded session (a tape): its faults
        _tape(recording, ids, output, list_, force)
        return
    if list_:
        if ids or output is not None:
            fail("--list takes no --quirk or --output")
        _print_list(recording, load_original(recording))
        return
    if not ids:
        fail("name a quirk with --quirk ID (streamtool mutate REC --list shows them)")
    if output is None:
        fail("give the new recording's path with -o OUT (- for stdout)")
    to_stdout = str(output) == "-"
    if not to_stdout and output.resolve() == recording.resolve():
        fail(f"{output}: the output would overwrite the recording it is made from")
    from streamtool.core.recording.recorder import check_output

    if not to_stdout:
        with user_errors(str(output)):
            check_output(output, force)
        if output.exists() and not output.is_file():  # renamed over, a device would be replaced
            fail(f"{output}: is not a regular file (a device, FIFO or socket)")
    original = load_original(recording)
    records: list[Any]
    try:
        if original.records is not None:
            header, records, end = apply_session(original, ids)
        else:
            header, records, end = apply(original, ids)
    except NotApplicable as exc:
        qid = exc.args[0]
        fail(f"{recording}: quirk {qid} does not apply to it ({_why(original, qid)})")
    if to_stdout:
        _write_stdout(header, records, end)
        output = Path("stdout")
    else:
        _write(output, header, records, end, force)
    what = "records" if original.records is not None else "reads"
    sys.stderr.write(f"streamtool: wrote {output} ({', '.join(ids)}; {len(records)} {what})\n")


def _tape(folder: Path, ids: list[str], output: Path | None, list_: bool, force: bool) -> None:
    """``mutate TAPE``: a recorded session's faults, listed or applied (a new tape)."""
    from streamtool.core.model.quirks import lookup
    from streamtool.core.net.mutated_library import mutate_tape, session_fault_list, tape_session

    if list_:
        if ids or output is not None:
            fail("--list takes no --quirk or --output")
        with user_errors(str(folder)):
            api, exchanges = tape_session(folder)
        faults = session_fault_list(api, exchanges)
        width = max((len(q) for q, _ in faults), default=10)
        out = [f"{folder}: a recorded {api} session ({len(exchanges)} exchanges)", ""]
        out.append("faults that can be applied:")
        out += [f"  {q:<{width}}  {lookup(q).explanation}" for q, why in faults if why is None]
        out += ["", "not applicable to this session:"]
        out += [f"  {q:<{width}}  {why}" for q, why in faults if why is not None]
        sys.stdout.write("\n".join(out) + "\n")
        return
    if not ids:
        fail("name a fault with --quirk ID (streamtool mutate TAPE --list shows them)")
    if output is None:
        fail("give the new tape's folder with -o OUT")
    if output.resolve() == folder.resolve():
        fail(f"{output}: the output would overwrite the tape it is made from")
    with user_errors(str(folder)):
        try:
            written = mutate_tape(folder, ids, output, force)
        except ValueError as exc:
            fail(str(exc))
    sys.stderr.write(f"streamtool: wrote {output} ({', '.join(ids)}; {len(written)} exchanges)\n")


def _why(original: "Original", quirk_id: str) -> str:
    from streamtool.core.mutations import is_session_fault, mutation_of

    if is_session_fault(quirk_id):
        return "a fault of a session: give the session's tape (its folder)"
    if quirk_id in original.reported:
        return "it shows that quirk already"
    apis = mutation_of(quirk_id).apis
    if original.api not in apis:
        return f"it is {original.api or 'of an unknown API'}; the quirk is {', '.join(apis)}"
    return "it has nothing the quirk changes"


def _write(
    output: Path, header: "Header", chunks: "list[Any]", end: "End | None", force: bool
) -> None:
    """Write to a temporary file beside OUTPUT, then move it into place: a crash never leaves a
    half-written OUTPUT, and two writers never mix their records."""
    from streamtool.core.model.records import RecordingError, os_error_text

    tmp = output.with_name(f".{output.name}.{os.getpid()}.tmp")
    try:
        _write_records(tmp, header, chunks, end)
        if force:
            os.replace(tmp, output)
        else:
            try:
                os.link(tmp, output)  # fails if OUTPUT appeared meanwhile: nothing is lost
            except FileExistsError:
                fail(f"{output}: exists (use --force to overwrite)")
    except RecordingError as exc:  # the temporary file is ours: the user named OUTPUT
        fail(f"{output}: {exc.message}")
    except OSError as exc:
        fail(f"{output}: {os_error_text(exc)}")
    finally:
        with contextlib.suppress(OSError):  # never made (a name too long, no such folder)
            tmp.unlink(missing_ok=True)


def _write_records(
    path: Path,
    header: "Header",
    chunks: "list[Any]",
    end: "End | None",
    opened: "Callable[[], None] | None" = None,
) -> None:
    """The recording's records written to ``path`` (secrets removed, a key pattern refused);
    ``opened`` is called once the file is open, before its first record is written."""
    from streamtool.core.model.records import Chunk
    from streamtool.core.recording.writer import RecordingWriter

    writer = RecordingWriter(path, header, force=True)
    if opened is not None:
        opened()
    for chunk in chunks:
        if type(chunk) is not Chunk:  # a WebSocket session's message or control frame
            writer.write_session_record(chunk)
            continue
        data = chunk.data
        writer.write_read(chunk.t or 0.0, data.encode("utf-8") if isinstance(data, str) else data)
    if end is not None:
        writer.close(end.t, end.reason, end.error)
    else:
        writer.abandon()


def _write_stdout(header: "Header", chunks: "list[Any]", end: "End | None") -> None:
    """``-o -``: the recording written as to a file (the same writer: a key pattern refused),
    then copied to standard output whole, so that a refusal writes nothing there. The file
    has no name once it is open (a kill leaves nothing behind): it is read through a second
    handle opened before its name is removed."""
    import shutil
    import tempfile

    from streamtool.core.model.records import RecordingError

    folder = tempfile.mkdtemp(prefix="streamtool-mutate-")
    path = Path(folder) / "stdout.jsonl"
    handles = []

    def unname() -> None:
        handles.append(path.open("rb"))
        path.unlink()
        os.rmdir(folder)

    try:
        _write_records(path, header, chunks, end, opened=unname)
    except RecordingError as exc:
        fail(f"-: {exc.message}")
    except OSError as exc:
        fail(f"cannot write the recording for stdout: {exc.strerror or exc}")
    finally:
        path.unlink(missing_ok=True)  # a refusal before it was open, a failure after
        if os.path.isdir(folder):
            os.rmdir(folder)
    with user_errors(), handles[0] as fh:
        shutil.copyfileobj(fh, sys.stdout.buffer)
        sys.stdout.buffer.flush()


def _print_list(path: Path, original: "Original") -> None:
    from streamtool.core.mutations import WIRE_APIS, applies, generatable, mutation_of

    out = sys.stdout
    api = original.api or "unknown"
    out.write(f"{path}: {api} (converter {original.converter})\n\n")
    session = original.records is not None  # a WebSocket session: its own mutations only
    rows = [
        i
        for i in generatable()
        if original.api in mutation_of(i.id).apis and mutation_of(i.id).session == session
    ]
    width = max((len(i.id) for i in rows), default=10)
    out.write(f"quirks that can be applied ({api}):\n")
    n = 0
    for info in rows:
        if applies(original, info.id):
            n += 1
            out.write(
                f"  {info.id:<{width}}  {info.severity:<5}  {info.kind:<8}  {info.explanation}\n"
            )
    if not n:
        out.write("  (none)\n")
    skipped = [i for i in rows if not applies(original, i.id)]
    if skipped:
        out.write(f"\nnot applicable to this recording ({api}):\n")
        for info in skipped:
            out.write(f"  {info.id:<{width}}  {_why(original, info.id)}\n")
    for other in WIRE_APIS:
        if other == original.api:
            continue
        ids = [i.id for i in generatable() if other in mutation_of(i.id).apis]
        out.write(f"\nfor {other} recordings: {', '.join(ids)}\n")
