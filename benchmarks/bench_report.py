"""How long a large recording's HTML report takes to open in Chromium.

Writes a recording of about ``--mb`` megabytes (OpenAI Chat Completions, one long streamed
``write_file`` call, one network read per event), writes its report with ``streamtool report``,
then opens the page in Debian's chromium (headless, through playwright) ``--repeat`` times and
prints the page's size, the time to write it and the median time from navigation until the page
has loaded and answers a script (target: at most 10 s for 50 MB). Exit code 1 if the target is
missed.

    python -m benchmarks.bench_report [--mb 50] [--repeat 3] [--html PAGE]

``--html PAGE`` times an existing page instead (a report written by another version).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.generators import openai_chat

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking"]
TARGET_S = 10.0


def open_time(page_path: Path, repeat: int, timeout_s: float) -> list[float]:
    from playwright.sync_api import sync_playwright

    times = []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        try:
            for _ in range(repeat):
                page = browser.new_page()
                start = time.perf_counter()
                page.goto(page_path.as_uri(), wait_until="load", timeout=timeout_s * 1000)
                page.evaluate("document.body.getBoundingClientRect().height")  # layout done
                times.append(time.perf_counter() - start)
                page.close()
        finally:
            browser.close()
    return times


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--html", type=Path, default=None)
    ap.add_argument("--timeout", type=float, default=900.0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.html is None:
            rec = Path(tmp) / "big.jsonl"
            openai_chat(rec, int(args.mb * 1024 * 1024))
            page_path = Path(tmp) / "big.report.html"
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "streamtool.cli", "report", str(rec), "-o", str(page_path)],
                check=True,
                capture_output=True,
            )
            wrote = time.perf_counter() - start
            print(f"recording: {rec.stat().st_size / 1e6:.1f} MB; report written in {wrote:.1f} s")
        else:
            page_path = args.html
        print(f"page: {page_path.stat().st_size / 1e6:.1f} MB")
        times = open_time(page_path, args.repeat, args.timeout)
        median = statistics.median(times)
        print(
            f"chromium open: median {median:.2f} s of {len(times)} "
            f"({', '.join(f'{t:.2f}' for t in times)}); target <= {TARGET_S:.0f} s"
        )
    sys.exit(0 if median <= TARGET_S else 1)


if __name__ == "__main__":
    main()
