"""Bytes and text in, events out: SSE, the other framings (NDJSON, JSON arrays), incremental JSON,
HTTP body decoding and Kimi's special tokens. Sans-IO: every class is fed and asked, never reads."""
