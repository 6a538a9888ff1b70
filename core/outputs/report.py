"""The shareable HTML report of one recording: one self-contained page. Sans-IO.

:func:`build_report` turns a finished :class:`~streamtool.core.outputs.inspect.Inspector` (made with
``keep_items=True``) into the text of an HTML file that needs nothing else: inline CSS, JS and SVG,
no network access, no font or script from elsewhere. It holds the facts, the final tree (text,
reasoning, tool calls with their arguments, files with their paths, errors, quirks with their
explanations), an SVG timeline of the reads (bytes over time, stalls marked, a read's content on
hover), the raw reads (collapsed), and a player that replays the stream at the recorded pace
(play/pause, speed, step read by read). Everything from the recording is escaped; the page says
nothing about the machine it was made on.
"""

from __future__ import annotations

import json
import re
from html import escape
from typing import Any

from ..model import SegmentEvent, SegmentEventType
from ..model.records import read_noun
from .inspect import Inspector

SVG_W, SVG_H, PAD = 960, 180, 30
# What the page embeds at most, so that a recording of any size opens in a browser at once: the
# timeline draws one bar per read up to MAX_BARS reads, beyond that one bar per run of reads;
# the raw reads list the first MAX_RAW_READS (drawn when opened, RAW_PAGE at a time); the player
# holds the first MAX_PLAYER_READS reads and up to MAX_PLAYER_CHARS characters of the stream's
# content, the tree MAX_TREE_CHARS. The page says where it stops and which command shows the
# rest. The inspector a report is made from keeps the facts of the first REPORT_READS reads and
# the items of the first MAX_PLAYER_READS (drive.inspect_file.inspect_for_report): memory does
# not grow with the reads beyond their times and sizes.
MAX_BARS = 1500
MAX_STALLS = 300
MAX_RAW_READS = 2000
RAW_PAGE = 200
MAX_PLAYER_READS = 20_000
MAX_PLAYER_CHARS = 2_000_000
MAX_TREE_CHARS = 1_000_000
REPORT_READS = max(MAX_RAW_READS, MAX_BARS)  # the reads whose facts the page shows
# a lone surrogate: a file name's byte that is not UTF-8 (Python keeps it as one), or a JSON
# escape in a recording's header; the page is UTF-8, and shows U+FFFD in its place
_SURROGATE = re.compile("[\ud800-\udfff]")


def _segments(inspector: Inspector) -> list[dict[str, Any]]:
    """The final tree: segments in stream order, with their content joined and metadata (the
    replay's own segments, kept with their content when the inspector keeps its items)."""
    engine = inspector.engine
    log = engine.segments
    if inspector.items is None or log is None:
        return []
    invocations: dict[str, dict[str, Any]] = {}
    for inv in engine.invocations():
        if log.get(inv.id) is not None:
            invocations[inv.id] = inv.to_dict()
    order: list[dict[str, Any]] = []
    for seg in log.segments:
        done: dict[str, Any] = {
            "id": seg.id,
            "type": seg.type.value,
            "metadata": dict(seg.metadata),
            "ended": seg.ended,
        }
        if log.get(seg.id) is seg and seg.id in invocations:
            done["invocation"] = invocations[seg.id]
        done["content"] = seg.text
        order.append(done)
    return order


def _player_data(inspector: Inspector) -> dict[str, Any]:
    """Per read: its time and the segment events it produced, for the in-page player; the
    first ``MAX_PLAYER_READS`` reads, up to ``MAX_PLAYER_CHARS`` characters of content
    (``total``: the stream's reads, ``reads`` may hold fewer)."""
    total = inspector.count
    reads: list[dict[str, Any]] = []
    for i, (t, size, _) in enumerate(inspector.points):
        if i == MAX_PLAYER_READS:
            break
        reads.append({"i": i, "t": t, "bytes": size, "ev": []})
    tail: list[Any] = []
    chars = 0
    stop: int | None = None if total <= MAX_PLAYER_READS else MAX_PLAYER_READS
    for where, item in inspector.items or []:
        if where is not None and stop is not None and where >= stop:
            continue
        if where is None and stop is not None:
            continue  # the end of the stream is not reached in the page
        target = reads[where]["ev"] if where is not None else tail
        if isinstance(item, SegmentEvent) and item.event_type is SegmentEventType.CONTENT:
            chars += len(item.delta or "")
            if chars > MAX_PLAYER_CHARS and where is not None:
                stop = where
                reads[where]["ev"] = []
                continue
        if isinstance(item, SegmentEvent):
            if item.event_type is SegmentEventType.START:
                meta = item.metadata or {}
                kind = item.segment_type or "text"
                # a file segment's kind already names its tool (write_file src/a.py): the label
                # adds the tool's name only where the kind does not say it
                label = meta.get("tool_name") or ""
                if label == kind:
                    label = ""
                target.append(["s", item.segment_id, kind, label])
            elif item.event_type is SegmentEventType.CONTENT:
                target.append(["c", item.segment_id, item.delta or ""])
            else:
                path = (item.metadata or {}).get("path")
                target.append(["e", item.segment_id, path if isinstance(path, str) else ""])
        else:
            kind = type(item).__name__
            if kind == "Quirk":
                target.append(["q", getattr(item, "id", "")])
            elif kind == "StreamError":
                target.append(["x", getattr(item, "kind", ""), getattr(item, "message", "")])
    if stop is not None:
        del reads[stop:]
        tail = []
    return {
        "reads": reads,
        "tail": tail,
        "total": total,
        "per_bar": _per_bar(total),
        "unit": read_noun(inspector.header.websocket),
    }


def _per_bar(reads: int) -> int:
    """How many reads one timeline bar stands for."""
    return max(1, -(-reads // MAX_BARS))


def _json_script(data: Any) -> str:
    """JSON safe inside a <script> element (no ``</script>``, no HTML comment openers)."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _svg_timeline(inspector: Inspector, result: dict[str, Any]) -> str:
    points = inspector.points
    n = len(points)
    times, sizes = points.times, points.sizes
    timed = points.timed()
    end = result["timing"]["duration_s"] if timed else None
    span = max(end or 0.0, max(times, default=0.0)) if timed else float(n or 1)
    span = span or 1.0
    per = _per_bar(n)
    unit = read_noun(inspector.header.websocket)
    # one bar per read, or per run of ``per`` reads (bytes summed) in a long recording
    bars = [(i, min(i + per, n), sum(sizes[i : i + per])) for i in range(0, n, per)]
    top = max((b for _, _, b in bars), default=1) or 1
    inner_w, inner_h = SVG_W - 2 * PAD, SVG_H - 2 * PAD

    def x_of(i: int) -> float:
        value = times[i] if timed else float(i)
        return PAD + inner_w * value / span

    parts = [
        f'<svg id="timeline-svg" viewBox="0 0 {SVG_W} {SVG_H}" width="100%" role="img" '
        f'aria-label="bytes per {unit} over time" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{PAD}" y1="{SVG_H - PAD}" x2="{SVG_W - PAD}" y2="{SVG_H - PAD}" class="axis"/>',
    ]
    stall = inspector.stall
    drawn = 0
    for i, gap in enumerate(points.gaps if timed else ()):
        if drawn == MAX_STALLS:
            break
        if gap == gap and gap > stall:
            drawn += 1
            x0 = PAD if i == 0 else x_of(i - 1)
            x1 = x_of(i)
            parts.append(
                f'<rect class="stall" x="{x0:.1f}" y="{PAD}" width="{max(1.0, x1 - x0):.1f}" '
                f'height="{inner_h}"><title>stall: {gap:.2f} s before {unit} {i}</title></rect>'
            )
    bar_w = max(2.0, min(12.0, inner_w / max(1, len(bars)) * 0.8))
    kept = inspector.reads
    for first, last, size in bars:
        t = times[first] if times[first] == times[first] else None
        h = max(1.0, inner_h * size / top)
        x = x_of(first) - bar_w / 2
        if last - first == 1 and first < len(kept):
            r = kept[first]
            tip = (
                f"{unit} {first}"
                + (f" at {r.t:.3f} s" if r.t is not None else "")
                + f", {r.bytes} bytes, {r.events} events: {r.describe(inspector.call_names)}"
                + (f" [cuts: {', '.join(r.cuts)}]" if r.cuts else "")
                + "\n"
                + (" ".join(r.frames) + "\n" if inspector.header.websocket else "")
                + r.preview
            )
        else:
            tip = f"{unit}s {first} to {last - 1}"
            tip += f" from {t:.3f} s" if t is not None else ""
            tip += f", {size:,} bytes"
        parts.append(
            f'<rect class="read" data-read="{first}" x="{x:.1f}" y="{SVG_H - PAD - h:.1f}" '
            f'width="{bar_w:.1f}" height="{h:.1f}"><title>{escape(tip)}</title></rect>'
        )
    label_end = f"{span:.2f} s" if timed else f"{unit} {n - 1}"
    parts.append(
        f'<text x="{PAD}" y="{SVG_H - 8}" class="lbl">{"0 s" if timed else unit + " 0"}</text>'
    )
    parts.append(
        f'<text x="{SVG_W - PAD}" y="{SVG_H - 8}" class="lbl" text-anchor="end">'
        f"{escape(label_end)}</text>"
    )
    parts.append(f'<text x="{PAD}" y="{PAD - 8}" class="lbl">{top:,} bytes</text>')
    parts.append(
        f'<line id="playhead" x1="{PAD}" y1="{PAD}" x2="{PAD}" y2="{SVG_H - PAD}" '
        'class="playhead"/>'
    )
    parts.append("</svg>")
    return "".join(parts)


def _timeline_note(inspector: Inspector) -> str:
    reads = inspector.count
    per = _per_bar(reads)
    unit = read_noun(inspector.header.websocket)
    notes = []
    if per > 1:
        notes.append(f"{reads:,} {unit}s: each bar stands for {per:,} {unit}s in a row.")
    stalls = inspector.stall_count
    if stalls > MAX_STALLS:
        notes.append(f"The first {MAX_STALLS} of {stalls:,} stalls are marked.")
    return f'<p class="dim" id="timeline-note">{escape(" ".join(notes))}</p>' if notes else ""


def _tree_html(inspector: Inspector, result: dict[str, Any]) -> str:
    out: list[str] = ['<ul class="tree">']
    budget = MAX_TREE_CHARS
    for seg in _segments(inspector):
        kind = seg["type"]
        meta = seg["metadata"]
        title = kind
        if meta.get("tool_name") and kind == "tool_call":
            title = f"tool call {meta['tool_name']}"
        if meta.get("path"):
            title += f" {meta['path']}"
        head = f'<span class="kind k-{escape(kind)}">{escape(title)}</span>'
        if kind not in ("text", "reasoning"):
            head += f' <span class="dim">{escape(seg["id"])}</span>'
        if not seg["ended"]:
            head += ' <span class="bad">(not ended)</span>'
        body = seg["content"]
        inv = seg.get("invocation")
        if kind == "tool_call" and inv is not None and inv.get("arguments") is not None:
            body = json.dumps(inv["arguments"], indent=2, ensure_ascii=False)
        shown = body[: max(0, budget)]
        budget -= len(shown)
        cut = ""
        if len(shown) < len(body):
            cut = (
                f'<p class="dim capped">… {len(body) - len(shown):,} more characters not shown: '
                f"the page holds at most {MAX_TREE_CHARS:,} characters of the tree "
                "(streamtool replay FILE --format json gives them all)</p>"
            )
        out.append(f'<li class="seg seg-{escape(kind)}">{head}<pre>{escape(shown)}</pre>{cut}</li>')
    out.append("</ul>")
    unit = read_noun(inspector.header.websocket)
    if result["quirks"]:
        out.append('<h3>Quirks</h3><ul class="quirks">')
        for q in result["quirks"]:
            where = "end" if q["read"] is None else f"{unit} {q['read']}"
            if q["t"] is not None:
                where += f" at {q['t']:.2f} s"
            out.append(
                f'<li><span class="sev sev-{escape(q["severity"])}">{escape(q["severity"])}'
                f'</span> <b>{escape(q["id"])}</b> <span class="dim">{escape(where)}</span><br>'
                f"{escape(q['explanation'])}<br>"
                f'<span class="dim">{escape(q["reference"])} · {escape(q["doc"])}</span></li>'
            )
        out.append("</ul>")
    if result["errors"]:
        out.append('<h3>Errors</h3><ul class="errors">')
        for e in result["errors"]:
            where = "end" if e["read"] is None else f"{unit} {e['read']}"
            out.append(
                f'<li><b class="bad">{escape(e["kind"])}</b> <span class="dim">{escape(where)}'
                f"</span> {escape(e['message'])}</li>"
            )
        out.append("</ul>")
    return "".join(out)


def _facts_html(result: dict[str, Any]) -> str:
    facts, timing = result["facts"], result["timing"]
    unit = read_noun(bool(facts.get("websocket")))
    rows = [
        ("provider", facts["provider"]),
        ("API", facts["api"]),
        ("model", facts["model"]),
        ("endpoint", facts["endpoint"]),
        ("status", facts["status"]),
        ("recorded at", facts["recorded_at"]),
        ("end", facts["end_reason"] or "cut off (no end record)"),
        ("finish reason", facts["finish_reason"]),
        ("converter / parser", f"{facts['converter']} / {facts['parser']}"),
        ("TTFB / TTFT", f"{_s(timing['ttfb_s'])} / {_s(timing['ttft_s'])}"),
        ("duration", _s(timing["duration_s"])),
        (
            f"{unit}s / bytes / events",
            f"{timing['reads']} / {timing['bytes']:,} / {timing['sse_events']}",
        ),
        (
            "gaps p50 / p95 / max",
            f"{_s(timing['gap_p50_s'], 3)} / {_s(timing['gap_p95_s'], 3)}"
            f" / {_s(timing['gap_max_s'], 3)}",
        ),
        (
            "stalls",
            ", ".join(f"{s['gap']:.2f} s before {unit} {s['read']}" for s in timing["stalls"])
            or "none",
        ),
        ("first tool fragment", _s(timing["first_tool_fragment_s"])),
    ]
    if timing["tokens_per_s"] is not None:
        rows.append(("tokens/s (generating)", f"{timing['tokens_per_s']:.1f}"))
    elif timing["chars_per_s"] is not None:
        rows.append(("chars/s (generating)", f"{timing['chars_per_s']:.1f}"))
    cells = "".join(
        f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in rows if v is not None
    )
    return f'<table class="facts">{cells}</table>'


def _raw_data(inspector: Inspector) -> list[list[Any]]:
    """The first ``MAX_RAW_READS`` reads for the page to draw when the list is opened."""
    rows: list[list[Any]] = []
    session = inspector.header.websocket
    for r in inspector.reads[:MAX_RAW_READS]:
        more = r.bytes > len(r.preview.encode("utf-8"))
        shown = r.preview
        if session:  # a message: its direction and type, then its text
            shown = " ".join(r.frames) + ("\n" + shown if shown else "")
        rows.append([r.index, r.t, r.bytes, ", ".join(r.cuts), shown, more])
    return rows


def _raw_html(inspector: Inspector) -> str:
    n = inspector.count
    unit = read_noun(inspector.header.websocket)
    note = ""
    if n > MAX_RAW_READS:
        note = (
            f'<p class="dim capped">The page holds the first {MAX_RAW_READS:,} of {n:,} {unit}s '
            "(streamtool inspect FILE shows them all).</p>"
        )
    return (
        f'<details id="raw"><summary>Raw {unit}s ({n:,})</summary>{note}'
        f'<ol start="0" id="raw-list"></ol>'
        f'<button id="raw-more" type="button" hidden>more {unit}s</button></details>'
    )


def _player_note(player: dict[str, Any]) -> str:
    held, total, unit = len(player["reads"]), player["total"], player["unit"]
    if held == total:
        return ""
    return (
        f'<p class="dim capped" id="player-note">The player stops at {unit} {held:,} of '
        f"{total:,}: the page holds at most {MAX_PLAYER_READS:,} {unit}s and "
        f"{MAX_PLAYER_CHARS:,} characters of the stream (streamtool replay FILE plays it all).</p>"
    )


def _s(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f} s"


def build_report(inspector: Inspector) -> str:
    """The HTML text of the report (the inspector must have been made with ``keep_items``):
    text that is UTF-8 whatever the file's name or the recording held."""
    if inspector.items is None:
        raise ValueError("build_report needs an Inspector made with keep_items=True")
    result = inspector.result(with_reads=False)
    # the file's name only: the report says nothing about the folders of the machine
    name = str(result["source"]).replace("\\", "/").rsplit("/", 1)[-1]
    result["source"] = name
    title = f"streamtool report: {name}"
    player = _player_data(inspector)
    data = _json_script(player)
    page = _PAGE.format(
        title=escape(title),
        source=escape(str(result["source"])),
        css=_CSS,
        facts=_facts_html(result),
        timeline=_svg_timeline(inspector, result) + _timeline_note(inspector),
        player_note=_player_note(player),
        tree=_tree_html(inspector, result),
        raw=_raw_html(inspector),
        raw_data=_json_script(_raw_data(inspector)),
        raw_page=RAW_PAGE,
        unit=player["unit"],
        units=player["unit"].capitalize() + "s",
        data=data,
        js=_JS,
    )
    return _SURROGATE.sub("\ufffd", page)


_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;
padding:16px;color:#1d2330;background:#fbfbfd}
h1{font-size:18px;margin:0 0 12px}h2{font-size:16px;margin:22px 0 8px}h3{font-size:14px}
pre{white-space:pre-wrap;word-break:break-word;background:#f1f3f7;padding:6px 8px;margin:4px 0;
border-radius:4px;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace;max-height:420px;
overflow:auto}
table.facts th{text-align:left;padding-right:14px;font-weight:600;color:#555;vertical-align:top}
.dim{color:#777}.bad{color:#b3261e}.kind{font-weight:600}
.k-reasoning{color:#6d5bd0}.k-tool_call{color:#0a6d8a}.k-write_file,.k-patch_file{color:#2e7d32}
.tree,.quirks,.errors{list-style:none;padding-left:0}.seg{margin:8px 0}
.sev{display:inline-block;min-width:3.2em;font-weight:700}.sev-error{color:#b3261e}
.sev-warn{color:#a15c00}.sev-info{color:#0a6d8a}
svg .read{fill:#2f7d5b}svg .read.on{fill:#e07b00}svg .stall{fill:#fde2e1}
svg .axis{stroke:#999}svg .lbl{font-size:11px;fill:#666}svg .playhead{stroke:#e07b00;stroke-width:2}
#controls button,#controls select{font:inherit;margin-right:6px}
#out{min-height:80px}.pseg{margin:4px 0}
"""

_JS = r"""
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("player-data").textContent);
  var reads = data.reads;
  var out = document.getElementById("out");
  var status = document.getElementById("pstatus");
  var playBtn = document.getElementById("play");
  var speedSel = document.getElementById("speed");
  var svg = document.getElementById("timeline-svg");
  var bars = svg ? svg.querySelectorAll("rect.read") : [];
  var perBar = data.per_bar || 1;
  var next = 0, timer = null, segs = {}, lit = -1;
  function seg(id, kind, label) {
    var box = document.createElement("div");
    box.className = "pseg";
    var head = document.createElement("div");
    head.className = "kind k-" + kind;
    head.textContent = kind + (label ? " " + label : "");
    var pre = document.createElement("pre");
    box.appendChild(head); box.appendChild(pre); out.appendChild(box);
    segs[id] = {head: head, pre: pre};
    return segs[id];
  }
  function apply(ev) {
    var s;
    if (ev[0] === "s") { seg(ev[1], ev[2], ev[3]); }
    else if (ev[0] === "c") {
      s = segs[ev[1]] || seg(ev[1], "text", "");
      s.pre.textContent += ev[2];
    } else if (ev[0] === "e") {
      s = segs[ev[1]];
      if (s && ev[2]) { s.head.textContent += " " + ev[2]; }
    }
    else if (ev[0] === "q") { note("quirk " + ev[1], "sev-warn"); }
    else if (ev[0] === "x") { note("error " + ev[1] + ": " + ev[2], "bad"); }
  }
  function note(text, cls) {
    var d = document.createElement("div");
    d.className = cls; d.textContent = text; out.appendChild(d);
  }
  function show() {
    status.textContent = data.unit + " " + next + " / " + reads.length +
      (next > 0 && reads[next - 1].t !== null ? " at " + reads[next - 1].t.toFixed(3) + " s" : "");
    var on = next > 0 ? Math.floor((next - 1) / perBar) : -1;
    if (lit !== on) {
      if (lit >= 0 && bars[lit]) { bars[lit].classList.remove("on"); }
      if (on >= 0 && bars[on]) { bars[on].classList.add("on"); }
      lit = on;
    }
    var head = document.getElementById("playhead");
    if (head && on >= 0 && bars[on]) {
      var b = bars[on];
      var x = parseFloat(b.getAttribute("x")) + parseFloat(b.getAttribute("width")) / 2;
      head.setAttribute("x1", x); head.setAttribute("x2", x);
    }
  }
  function step() {
    if (next >= reads.length) { return false; }
    reads[next].ev.forEach(apply);
    next += 1;
    if (next === reads.length) { data.tail.forEach(apply); }
    show();
    return next < reads.length;
  }
  function reset() { stop(); out.textContent = ""; segs = {}; next = 0; show(); }
  function stop() {
    if (timer !== null) { clearTimeout(timer); timer = null; }
    playBtn.textContent = "play";
  }
  function schedule() {
    if (next >= reads.length) { stop(); return; }
    var speed = parseFloat(speedSel.value);
    var prev = next > 0 ? reads[next - 1].t : 0;
    var t = reads[next].t;
    var wait = 0;
    if (t !== null && prev !== null && isFinite(speed)) {
      wait = Math.max(0, t - prev) * 1000 / speed;
    }
    timer = setTimeout(function () {
      timer = null;
      if (step()) { schedule(); } else { stop(); }
    }, Math.min(wait, 5000));
  }
  playBtn.addEventListener("click", function () {
    if (timer !== null) { stop(); return; }
    if (next >= reads.length) { reset(); }
    playBtn.textContent = "pause"; schedule();
  });
  document.getElementById("step").addEventListener("click", function () { stop(); step(); });
  document.getElementById("reset").addEventListener("click", reset);
  show();
  // the raw reads are drawn when the list is opened, a page at a time
  var rawBox = document.getElementById("raw");
  var rawList = document.getElementById("raw-list");
  var rawMore = document.getElementById("raw-more");
  var rawScript = document.getElementById("raw-data");
  var rawRows = null, rawNext = 0, rawPage = parseInt(rawScript.getAttribute("data-page"), 10);
  function drawRaw() {
    if (rawRows === null) { rawRows = JSON.parse(rawScript.textContent); }
    var stop = Math.min(rawRows.length, rawNext + rawPage);
    var frag = document.createDocumentFragment();
    for (; rawNext < stop; rawNext++) {
      var row = rawRows[rawNext];
      var li = document.createElement("li");
      li.id = "read-" + row[0];
      var meta = document.createElement("span");
      meta.className = "dim";
      meta.textContent = (row[1] === null ? "" : row[1].toFixed(3) + " s, ") + row[2] +
        " bytes" + (row[3] ? ", cuts: " + row[3] : "");
      var pre = document.createElement("pre");
      pre.textContent = row[4] + (row[5] ? " \u2026" : "");
      li.appendChild(meta); li.appendChild(pre); frag.appendChild(li);
    }
    rawList.appendChild(frag);
    rawMore.hidden = rawNext >= rawRows.length;
  }
  rawBox.addEventListener("toggle", function () {
    if (rawBox.open && rawNext === 0) { drawRaw(); }
  });
  rawMore.addEventListener("click", drawRaw);
})();
"""

_PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="streamtool report">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="Content-Security-Policy" content="default-src 'none';
 style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<title>{title}</title><style>{css}</style></head>
<body>
<h1>{source}</h1>
<section id="facts"><h2>Facts</h2>{facts}</section>
<section id="timeline"><h2>Timeline</h2><p class="dim">Bytes per {unit} over time; red bands are
stalls. Hover a bar to see the {unit}.</p>{timeline}</section>
<section id="player"><h2>Player</h2>
<div id="controls"><button id="play" type="button">play</button><button id="step" type="button">step
</button><button id="reset" type="button">reset</button><label>speed <select id="speed">
<option value="0.5">0.5x</option><option value="1" selected>1x</option><option value="2">2x</option>
<option value="10">10x</option><option value="Infinity">max</option></select></label>
<span id="pstatus" class="dim"></span></div>{player_note}<div id="out"></div></section>
<section id="tree"><h2>Final tree</h2>{tree}</section>
<section><h2>{units}</h2>{raw}</section>
<script type="application/json" id="player-data">{data}</script>
<script type="application/json" id="raw-data" data-page="{raw_page}">{raw_data}</script>
<script>{js}</script>
</body></html>
"""
