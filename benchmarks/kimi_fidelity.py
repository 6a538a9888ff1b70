"""How much text ``--transform kimi-k2`` loses, as counts (not timings).

    python -m benchmarks.kimi_fidelity

For each bundled Kimi recording, 200 seeded random cuttings of its body go through the
transform; prints how many cuttings give a client text or reasoning different from the replay
with the ``kimi-k2`` converter, and the characters missing in all. Both should be 0.
"""

from __future__ import annotations

import random
from pathlib import Path

from streamtool.core.apis.openai_chat.kimi_transform import KimiTransform
from streamtool.core.engine.replay import ReplayEngine
from streamtool.core.model.records import Chunk, End, Header
from streamtool.core.recording.reader import Source

RECORDINGS = Path(__file__).resolve().parent.parent / "recordings"


def summary(body: bytes, converter: str) -> dict:
    """The replay summary of a Chat Completions ``body`` read at once by ``converter``."""
    engine = ReplayEngine(Header(api="chat.completions"), converter=converter)
    engine.feed_chunk(Chunk(0.0, body))
    engine.finish(End(None, "complete", None))
    return engine.summary()


def transformed(body: bytes, points: list[int]) -> bytes:
    """``body`` through a KimiTransform, fed in pieces cut at ``points``."""
    t = KimiTransform()
    out = bytearray()
    last = 0
    for p in [*points, len(body)]:
        if p > last:
            out += t.feed(body[last:p])
            last = p
    return bytes(out + t.finish())


def main() -> None:
    for path in sorted(RECORDINGS.glob("*kimi*.jsonl")):
        reads = [c.data for c in Source(path).chunks()]
        body = b"".join(r if isinstance(r, bytes) else r.encode("utf-8") for r in reads)
        ref = summary(body, "kimi-k2")
        want = len(ref["text"]) + len(ref["reasoning"])
        rng = random.Random(28)
        bad = lost = 0
        for _ in range(200):
            points = sorted(rng.sample(range(1, len(body)), rng.randint(1, 30)))
            got = summary(transformed(body, points), "openai-chat")
            if (got["text"], got["reasoning"]) != (ref["text"], ref["reasoning"]):
                bad += 1
                lost += max(0, want - len(got["text"]) - len(got["reasoning"]))
        print(f"{path.stem}: {bad} of 200 cuttings lose text, {lost} characters missing")


if __name__ == "__main__":
    main()
