"""benchmarks/results/dashboard.html: one self-contained page (inline CSS, inline SVG, base64 PNG; no
network) with the latest TTFT run, its history per metric, the compile-time bench, the training-step
bench and the latest kernel table."""

from __future__ import annotations

import base64
import csv
import html
import io
import sqlite3
from pathlib import Path
from typing import Any

from benchmarks.common import db
from benchmarks.ttft import render

CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:1280px;padding:0 16px;color:#222}
h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ddd}h3{font-size:15px}
table{border-collapse:collapse;margin:8px 0;font-size:13px}td,th{border:1px solid #ddd;padding:3px 8px}
th{background:#f4f4f4}td{text-align:right}td:first-child{text-align:left}
tr.err td{background:#fde8e8}.err{color:#b00000}.meta{color:#666}.chart{max-width:100%;height:auto}
details{margin:8px 0}summary{cursor:pointer;color:#0550ae}
"""


def _table(header: list[str], rows: list[list[Any]], error_rows: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{html.escape(str(h))}</th>" for h in header)
    body = []
    for i, row in enumerate(rows):
        cls = ' class="err"' if i in error_rows else ""
        body.append(f"<tr{cls}>" + "".join(f"<td>{html.escape(str(c))}</td>" for c in row) + "</tr>")
    return f"<table><tr>{head}</tr>{''.join(body)}</table>"


def _run_meta(run: dict[str, Any]) -> str:
    return (
        f'<p class="meta">run <b>{html.escape(run["run_id"])}</b> · commit <code>{html.escape(run["git_commit"])}</code>'
        f" · {html.escape(run['cpu_model'])} · {run['cores']} cores · {run['ram_gb']} GB RAM · torch "
        f"{html.escape(run['torch_version'])} · {run['threads']} threads</p>"
    )


def _svg_history(series: dict[str, list[tuple[int, float]]], run_labels: list[str], title: str) -> str:
    """A line chart as inline SVG text: one line per series, x = run index (labelled date + commit)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams["svg.fonttype"] = "none"  # text stays text: smaller and searchable
    fig, ax = plt.subplots(figsize=(6.2, 3.0))
    for name, points in sorted(series.items()):
        path = name.rsplit(" x ", 1)[-1]
        ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", ms=3, label=name,
                color=render.PATH_COLORS.get(path), alpha=0.9,
                linestyle={"eager": ":", "inductor": "--"}.get(path, "-"))
    ax.set_yscale("log")
    ax.set_title(title, fontsize=9)
    ticks = list(range(len(run_labels)))
    step = max(1, len(ticks) // 8)
    ax.set_xticks(ticks[::step], run_labels[::step], rotation=25, ha="right", fontsize=6)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=5.5, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    buffer = io.StringIO()
    # No date/creator metadata: the page changes only when the numbers do.
    fig.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None, "Type": None, "Format": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):].replace("<svg ", '<svg class="chart" ', 1)


def _history(rows: list[dict[str, Any]], metrics: list[tuple[str, str]]) -> str:
    run_ids = sorted({r["run_id"] for r in rows})
    index = {run_id: i for i, run_id in enumerate(run_ids)}
    commit = {r["run_id"]: r["git_commit"] for r in rows}
    # run ids look like 2026-05-01T18-56-26-996695: label "05-01 18:56 <commit>"
    labels = [f"{r[5:10]} {r[11:13]}:{r[14:16]} {commit[r][:8]}" for r in run_ids]
    charts = []
    for metric, title in metrics:
        series: dict[str, list[tuple[int, float]]] = {}
        for row in rows:
            if row.get(metric):
                series.setdefault(f"{row['config']} x {row['path']}", []).append((index[row["run_id"]], row[metric]))
        if series:
            charts.append(f"<div>{_svg_history(series, labels, title)}</div>")
    return "".join(charts) or "<p>No history yet.</p>"


def _ttft_section(conn: sqlite3.Connection, out: Path) -> str:
    run = db.latest_run(conn, "results")
    if run is None:
        return "<h2>TTFT / TPOT</h2><p>No TTFT runs yet: <code>python benchmarks/ttft/run.py</code>.</p>"
    rows = db.load_rows(conn, "results", run["run_id"])
    parts = ["<h2>TTFT / TPOT: latest run</h2>", _run_meta(run),
             "<p>Medians over the measured iterations. Speedup columns: &gt; 1 means the first path is faster.</p>"]
    busiest = max((r.get("other_cpu_pct") or 0 for r in rows), default=0)
    if busiest > 10:
        parts.append(f'<p class="err"><b>Warning:</b> other processes used up to {busiest:.0f}% of the CPU while '
                     "this run measured: its times are inflated by contention (see the table's noise row).</p>")
    for config, paths in render.by_config(rows).items():
        parts.append(f"<h3>{html.escape(config)}</h3>")
        parts.append(_table(render.table_header(paths), render.table_rows(paths)))
        for path in render.PATH_ORDER:
            row = paths.get(path)
            if row and row.get("error"):
                parts.append(f'<p class="err"><b>{path} failed:</b> {html.escape(row["error"][:1500])}</p>')
            elif row and row.get("note"):
                parts.append(f"<p><b>{path} note:</b> {html.escape(row['note'])}</p>")
    png = out / "ttft.png"
    if png.exists():
        data = base64.b64encode(png.read_bytes()).decode()
        parts.append(f'<img class="chart" alt="latest TTFT chart" src="data:image/png;base64,{data}">')
    history = db.load_rows(conn, "results")
    parts.append("<h2>TTFT / TPOT: history per metric</h2>")
    parts.append("<p>One point per run (x: date and commit), one line per config x path; log scale. "
                 "Missing points are failed runs.</p>")
    parts.append(_history(history, [(m, label) for m, label, _ in render.METRICS if m != "decode_tps"]))
    raw = [[r["run_id"], r["git_commit"], r["config"], r["path"], render.fmt(r.get("ttft_seq_ms")),
            render.fmt(r.get("ttft_batched_ms")), render.fmt(r.get("tpot_ms")), render.fmt(r.get("compile_ms")),
            (r.get("error") or "")[:120]] for r in reversed(history)]
    parts.append("<details><summary>all TTFT rows</summary>" + _table(
        ["run", "commit", "config", "path", "TTFT seq ms", "TTFT batched ms", "TPOT ms", "compile ms", "error"], raw,
        {i for i, r in enumerate(raw) if r[-1]}) + "</details>")
    return "".join(parts)


def _compile_section(conn: sqlite3.Connection) -> str:
    run = db.latest_run(conn, "compile_results")
    if run is None:
        return ""
    rows = db.load_rows(conn, "compile_results", run["run_id"])
    table = [[r["config"], r["path"], render.fmt(r.get("cold_ms")), render.fmt(r.get("warm_ms")),
              render.fmt(r.get("cold_batched_ms")), render.fmt(r.get("warm_batched_ms")), (r.get("error") or "")[:300]]
             for r in rows]
    return "".join([
        "<h2>Compile time: latest run</h2>", _run_meta(run),
        "<p>Cold: fresh process, empty caches. Warm: a second process reusing the first one's caches. "
        "Each time is the first call of that shape (compile + one run).</p>",
        _table(["config", "path", "cold (1,1) ms", "warm (1,1) ms", "cold (1,P) ms", "warm (1,P) ms", "error"], table,
               {i for i, r in enumerate(table) if r[-1]}),
        "<h3>history</h3>",
        _history(db.load_rows(conn, "compile_results"), [("cold_ms", "cold compile (1,1) (ms)"),
                                                         ("warm_ms", "warm compile (1,1) (ms)")]),
    ])


def _train_section(conn: sqlite3.Connection) -> str:
    every = db.load_rows(conn, "train_results")
    if not every:
        return ""
    # A run often covers one precision (an autocast run takes an hour where torch's bf16 GEMMs
    # are slow): show each precision's latest run.
    latest = {r["precision"]: r["run_id"] for r in every}  # oldest first, so the newest wins
    parts = ["<h2>Training step: the latest run of each precision</h2>",
             "<p>Forward + backward + eager AdamW, medians; each path in its own process. GEMM floor: one "
             "step's FLOPs / the GEMM peak of that precision measured in the run (autocast: bf16 or widened to "
             "f32, whichever is faster).</p>"]
    for precision, run_id in latest.items():
        rows = [r for r in every if r["run_id"] == run_id and r["precision"] == precision]
        table = [[r["config"], r["path"], render.fmt(r.get("step_ms")), render.fmt(r.get("tokens_per_s")),
                  render.fmt(r.get("vs_eager")), render.fmt(r.get("vs_inductor")), render.fmt(r.get("forward_ms")),
                  render.fmt(r.get("backward_ms")), render.fmt(r.get("optimizer_ms")),
                  render.fmt(r.get("gemm_floor_ms")), render.fmt(r.get("compile_ms")),
                  render.fmt(r.get("peak_rss_mb")), (r.get("error") or "")[-300:]] for r in rows]
        parts += [
            f"<h3>{html.escape(precision)}</h3>",
            _run_meta(conn.execute("SELECT * FROM runs WHERE run_id = ?", (run_id,)).fetchone()),
            _table(["config", "path", "step ms", "tokens/s", "vs eager", "vs inductor", "forward ms", "backward ms",
                    "AdamW ms", "GEMM floor ms", "compile ms", "peak RSS MB", "error"], table,
                   {i for i, r in enumerate(table) if r[-1]}),
        ]
    parts += ["<h3>history</h3>", _history(every, [("step_ms", "training step (ms)")])]
    return "".join(parts)


def _kernel_section(out: Path) -> str:
    path = out / "kernels_latest.csv"
    if not path.exists():
        return ""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    columns = ["kernel_id", "dtype", "input_shape", "impl", "latency_us", "gbps", "gflops", "pct_roofline",
               "vs_eager", "vs_inductor", "runs", "error"]
    table = [[r.get(c, "") for c in columns] for r in rows]
    return ("<h2>Kernels: latest run</h2><p>From kernels_latest.csv (git "
            f"{html.escape(rows[0]['git_sha'] if rows else '')}). vs_eager / vs_inductor: &gt; 1 = this impl is faster.</p>"
            + _table(columns, table, {i for i, r in enumerate(rows) if r.get("error")}))


def write(conn: sqlite3.Connection, out: Path) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>luminal benchmarks</title><style>{CSS}</style>"
            f"</head><body><h1>luminal benchmarks</h1>{_ttft_section(conn, out)}{_compile_section(conn)}"
            f"{_train_section(conn)}{_kernel_section(out)}</body></html>")
    path = out / "dashboard.html"
    path.write_text(page)
    return path
