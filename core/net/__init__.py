"""The network edge: everything that opens a socket. Building and sending requests (``record``),
capturing SDK traffic (:class:`~streamtool.core.net.capture.Capture`), the HTTP server that plays
recordings back (``serve``) and its pacing plan."""
