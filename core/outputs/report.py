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
from html import escape
from typing import Any

from ..model import SegmentEvent, SegmentEventType, SegmentType, ToolInvocation
from .inspect import Inspector

SVG_W, SVG_H, PAD = 960, 180, 30


def _segments(inspector: Inspector) -> list[dict[str, Any]]:
    """The final tree: segments in stream order, with their content joined and metadata."""
    segs: dict[str, dict[str, Any]] = {}
    order: list[dict[str, Any]] = []
    for _, item in inspector.items or []:
        if isinstance(item, SegmentEvent):
            if item.event_type is SegmentEventType.START:
                new: dict[str, Any] = {
                    "id": item.segment_id,
                    "type": (item.segment_type or SegmentType.TEXT).value,
                    "metadata": dict(item.metadata or {}),
                    "parts": [],
                    "ended": False,
                }
                segs[item.segment_id] = new
                order.append(new)
            elif item.event_type is SegmentEventType.CONTENT:
                seg = segs.get(item.segment_id)
                if seg is not None:
                    seg["parts"].append(item.delta or "")
            else:
                seg = segs.get(item.segment_id)
                if seg is not None:
                    seg["ended"] = True
                    seg["metadata"].update(item.metadata or {})
        elif isinstance(item, ToolInvocation):
            seg = segs.get(item.id)
            if seg is not None:
                seg["invocation"] = item.to_dict()
    for done in order:
        done["content"] = "".join(done.pop("parts"))
    return order


def _player_data(inspector: Inspector) -> dict[str, Any]:
    """Per read: its time and the segment events it produced, for the in-page player."""
    reads: list[dict[str, Any]] = [
        {"i": r.index, "t": r.t, "bytes": r.bytes, "ev": []} for r in inspector.reads
    ]
    tail: list[Any] = []
    for where, item in inspector.items or []:
        target = reads[where]["ev"] if where is not None else tail
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
    return {"reads": reads, "tail": tail}


def _json_script(data: Any) -> str:
    """JSON safe inside a <script> element (no ``</script>``, no HTML comment openers)."""
    text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _svg_timeline(inspector: Inspector, result: dict[str, Any]) -> str:
    reads = inspector.reads
    timed = bool(reads) and all(r.t is not None for r in reads)
    end = result["timing"]["duration_s"] if timed else None
    span = max([end or 0.0, *[r.t or 0.0 for r in reads]]) if timed else float(len(reads) or 1)
    span = span or 1.0
    top = max((r.bytes for r in reads), default=1) or 1
    inner_w, inner_h = SVG_W - 2 * PAD, SVG_H - 2 * PAD

    def x_of(i: int) -> float:
        r = reads[i]
        value = r.t if timed and r.t is not None else float(i)
        return PAD + inner_w * value / span

    parts = [
        f'<svg id="timeline-svg" viewBox="0 0 {SVG_W} {SVG_H}" width="100%" role="img" '
        f'aria-label="bytes per read over time" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{PAD}" y1="{SVG_H - PAD}" x2="{SVG_W - PAD}" y2="{SVG_H - PAD}" class="axis"/>',
    ]
    stall = inspector.stall
    for i, r in enumerate(reads):
        if r.gap is not None and r.gap > stall and timed:
            x0 = PAD if i == 0 else x_of(i - 1)
            x1 = x_of(i)
            parts.append(
                f'<rect class="stall" x="{x0:.1f}" y="{PAD}" width="{max(1.0, x1 - x0):.1f}" '
                f'height="{inner_h}"><title>stall: {r.gap:.2f} s before read {i}</title></rect>'
            )
    bar_w = max(2.0, min(12.0, inner_w / max(1, len(reads)) * 0.8))
    for i, r in enumerate(reads):
        h = max(1.0, inner_h * r.bytes / top)
        x = x_of(i) - bar_w / 2
        tip = (
            f"read {i}"
            + (f" at {r.t:.3f} s" if r.t is not None else "")
            + f", {r.bytes} bytes, {r.events} events: {r.describe(inspector.call_names)}"
            + (f" [cuts: {', '.join(r.cuts)}]" if r.cuts else "")
            + "\n"
            + r.preview
        )
        parts.append(
            f'<rect class="read" data-read="{i}" x="{x:.1f}" y="{SVG_H - PAD - h:.1f}" '
            f'width="{bar_w:.1f}" height="{h:.1f}"><title>{escape(tip)}</title></rect>'
        )
    label_end = f"{span:.2f} s" if timed else f"read {len(reads) - 1}"
    parts.append(
        f'<text x="{PAD}" y="{SVG_H - 8}" class="lbl">{"0 s" if timed else "read 0"}</text>'
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


def _tree_html(inspector: Inspector, result: dict[str, Any]) -> str:
    out: list[str] = ['<ul class="tree">']
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
        out.append(f'<li class="seg seg-{escape(kind)}">{head}<pre>{escape(body)}</pre></li>')
    out.append("</ul>")
    if result["quirks"]:
        out.append('<h3>Quirks</h3><ul class="quirks">')
        for q in result["quirks"]:
            where = "end" if q["read"] is None else f"read {q['read']}"
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
            where = "end" if e["read"] is None else f"read {e['read']}"
            out.append(
                f'<li><b class="bad">{escape(e["kind"])}</b> <span class="dim">{escape(where)}'
                f"</span> {escape(e['message'])}</li>"
            )
        out.append("</ul>")
    return "".join(out)


def _facts_html(result: dict[str, Any]) -> str:
    facts, timing = result["facts"], result["timing"]
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
            "reads / bytes / events",
            f"{timing['reads']} / {timing['bytes']:,} / {timing['sse_events']}",
        ),
        (
            "gaps p50 / p95 / max",
            f"{_s(timing['gap_p50_s'], 3)} / {_s(timing['gap_p95_s'], 3)}"
            f" / {_s(timing['gap_max_s'], 3)}",
        ),
        (
            "stalls",
            ", ".join(f"{s['gap']:.2f} s before read {s['read']}" for s in timing["stalls"])
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


def _raw_html(inspector: Inspector) -> str:
    out = [f'<details id="raw"><summary>Raw reads ({len(inspector.reads)})</summary><ol start="0">']
    for r in inspector.reads:
        when = "" if r.t is None else f"{r.t:.3f} s, "
        cuts = f", cuts: {', '.join(r.cuts)}" if r.cuts else ""
        more = "" if r.bytes <= len(r.preview.encode("utf-8")) else " …"
        out.append(
            f'<li id="read-{r.index}"><span class="dim">{escape(when)}{r.bytes} bytes{cuts}'
            f"</span><pre>{escape(r.preview)}{more}</pre></li>"
        )
    out.append("</ol></details>")
    return "".join(out)


def _s(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f} s"


def build_report(inspector: Inspector) -> str:
    """The HTML text of the report (the inspector must have been made with ``keep_items``)."""
    if inspector.items is None:
        raise ValueError("build_report needs an Inspector made with keep_items=True")
    result = inspector.result()
    # the file's name only: the report says nothing about the folders of the machine
    name = str(result["source"]).replace("\\", "/").rsplit("/", 1)[-1]
    result["source"] = name
    title = f"streamtool report: {name}"
    data = _json_script(_player_data(inspector))
    return _PAGE.format(
        title=escape(title),
        source=escape(str(result["source"])),
        css=_CSS,
        facts=_facts_html(result),
        timeline=_svg_timeline(inspector, result),
        tree=_tree_html(inspector, result),
        raw=_raw_html(inspector),
        data=data,
        js=_JS,
    )


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
  var next = 0, timer = null, segs = {};
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
    status.textContent = "read " + next + " / " + reads.length +
      (next > 0 && reads[next - 1].t !== null ? " at " + reads[next - 1].t.toFixed(3) + " s" : "");
    for (var i = 0; i < bars.length; i++) { bars[i].classList.toggle("on", i === next - 1); }
    var head = document.getElementById("playhead");
    if (head && next > 0 && bars[next - 1]) {
      var b = bars[next - 1];
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
<section id="timeline"><h2>Timeline</h2><p class="dim">Bytes per read over time; red bands are
stalls. Hover a bar to see the read.</p>{timeline}</section>
<section id="player"><h2>Player</h2>
<div id="controls"><button id="play" type="button">play</button><button id="step" type="button">step
</button><button id="reset" type="button">reset</button><label>speed <select id="speed">
<option value="0.5">0.5x</option><option value="1" selected>1x</option><option value="2">2x</option>
<option value="10">10x</option><option value="Infinity">max</option></select></label>
<span id="pstatus" class="dim"></span></div><div id="out"></div></section>
<section id="tree"><h2>Final tree</h2>{tree}</section>
<section><h2>Reads</h2>{raw}</section>
<script type="application/json" id="player-data">{data}</script>
<script>{js}</script>
</body></html>
"""
