"""What a replay produces for people and machines: the deterministic transcript, golden files,
the diff of two streams, and what every API's encoder shares (``emit``: the reply, the timed
output, the lookup of an API's encoder). Sans-IO: callers own files and sockets."""
