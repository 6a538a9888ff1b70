"""An HTTP exchange's logic, sans-IO: building provider requests, matching a request to a
recorded one, playing a recording back, checking a request's Host. The sockets that carry them
are :mod:`streamtool.core.net`'s."""
