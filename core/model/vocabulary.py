"""The closed sets of names the model reports, as enums: a segment's type and its events' kinds
(re-exported by :mod:`streamtool.core.model`) and the kind of a
:class:`~streamtool.core.model.StreamError`.

A member is its name: it compares, hashes and serializes as the string, so every JSON and text
output is the same as with the bare string, and a typo is an error (mypy's, or an
AttributeError), never a name nobody checks for. The quirk ids have their own class,
:mod:`streamtool.core.model.quirk_ids`, generated from the catalogue; a quirk's severity and
kind are the catalogue's (:mod:`streamtool.core.model.quirks`), which a replay does not load.
"""

from enum import StrEnum


class SegmentType(StrEnum):
    TEXT = "text"
    REASONING = "reasoning"
    TOOL_CALL = "tool_call"
    WRITE_FILE = "write_file"
    PATCH_FILE = "patch_file"
    RUN_BASH = "run_bash"
    IMAGE = "image"  # an image the model generated (its format, size and index; never the data)
    # a protocol message the stream carried whole (an MCP JSON-RPC request, notification,
    # result or error): its metadata names it, its content is the message as JSON
    MESSAGE = "message"


class SegmentEventType(StrEnum):
    START = "SEGMENT_START"
    CONTENT = "SEGMENT_CONTENT"
    END = "SEGMENT_END"


class ErrorKind(StrEnum):
    """What went wrong in a stream (``errors[].kind`` of a replay)."""

    ARGUMENTS_MISMATCH = "arguments_mismatch"
    BAD_JSON = "bad_json"
    BAD_PAYLOAD = "bad_payload"
    KIMI_BAD_CALL_ID = "kimi_bad_call_id"
    PARTIAL_ARGS = "partial_args"
    PROMPT_BLOCKED = "prompt_blocked"
    PROVIDER_ERROR = "provider_error"
    # an error event a session went on from (more events came, no close): not the end of it
    PROVIDER_ERROR_RECOVERED = "provider_error_recovered"
    RECORDING_CUT_OFF = "recording_cut_off"
    RECORDING_ERROR = "recording_error"
    RECORDING_INTERRUPTED = "recording_interrupted"
    RECORDING_TIMEOUT = "recording_timeout"
    SEGMENT = "segment"
    TEXT_MISMATCH = "text_mismatch"
    TRUNCATED = "truncated"
    # Gemini's error finishes, under their reason in lower case
    MALFORMED_FUNCTION_CALL = "malformed_function_call"
    UNEXPECTED_TOOL_CALL = "unexpected_tool_call"
    RECORDING_LIMIT = "recording_limit"
    # the framing of a binary body (AWS event stream), as the wire's decoder names them
    FRAME_CRC = "frame_crc"
    FRAME_LENGTH = "frame_length"
    FRAME_HEADERS = "frame_headers"
    FRAME_CUT_OFF = "frame_cut_off"
    # Kimi K2's tool-call tokens that could not be read as tool calls
    KIMI_SECTION_UNTERMINATED = "kimi_section_unterminated"
    KIMI_SECTION_TOO_LARGE = "kimi_section_too_large"
    KIMI_CALL_WITHOUT_ARGUMENTS = "kimi_call_without_arguments"
    KIMI_STRAY_TEXT = "kimi_stray_text"

    @classmethod
    def recording(cls, end_reason: str) -> "ErrorKind":
        """The kind of a recording that ended for ``end_reason`` (not ``complete``)."""
        return cls(f"recording_{end_reason}")
