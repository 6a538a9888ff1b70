"""The replay engine: a recording's reads through the framing decoder, a converter and a handler,
with what the wire showed on the way (model faults). Sans-IO."""
