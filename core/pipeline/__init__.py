"""The stages every converter and handler shares: the tool-call tracker, the segment log (the one
fold of segment events), argument-run coalescing and the tool invocation adapter. Sans-IO."""
