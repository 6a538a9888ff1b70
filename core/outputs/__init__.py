"""What a replay produces for people and machines: the deterministic transcript, golden files,
the diff of two streams and the OpenAI-SSE emitter. Sans-IO: callers own files and sockets."""
