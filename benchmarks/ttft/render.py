"""The latest TTFT run as CSV, a markdown table (paths side by side, with speedups) and a PNG bar chart."""

from __future__ import annotations

import csv
import json
import math
import sqlite3
from pathlib import Path
from typing import Any

from benchmarks.common import db

PATH_ORDER = ("eager", "inductor", "luminal", "luminal_search")
PATH_COLORS = {"eager": "#8c8c8c", "inductor": "#4c78a8", "luminal": "#f58518", "luminal_search": "#e45756"}
# luminal with its schedule search (search_iterations): a column of its own, only in runs that
# asked for the path (run.py --paths ... luminal_search).
SEARCH = "luminal_search"

# (column, label, lower is better). The table's rows, the chart's panels and the dashboard's history.
METRICS = [
    ("ttft_seq_ms", "TTFT, sequential prefill (ms)", True),
    ("ttft_batched_ms", "TTFT, batched prefill (ms)", True),
    ("tpot_ms", "TPOT (ms/token)", True),
    ("decode_tps", "decode tokens/s", False),
    # Every path in one process, one iteration each in turn: the ratios to trust (interleaved.py).
    ("ttft_seq_interleaved_ms", "TTFT, sequential prefill, interleaved (ms)", True),
    ("ttft_batched_interleaved_ms", "TTFT, batched prefill, interleaved (ms)", True),
    ("tpot_interleaved_ms", "TPOT, interleaved (ms/token)", True),
    ("compile_ms", "compile + first call (1,1) (ms)", True),
    ("compile_batched_ms", "compile + first call (1,P) (ms)", True),
    ("peak_rss_mb", "peak RSS (MB)", True),
]
# Not a result: how much CPU other processes took while the path ran (% of all cores). Above a few
# percent the path's times are inflated by contention, not by the path.
NOISE = ("other_cpu_pct", "other processes' CPU during the path (%)")
# Counts, not speeds: shown without speedup columns. A path that cannot count its copies shows "–".
COUNT_ROWS = [
    ("graphs", "dynamo graphs compiled (eager: 0)"),
    ("decode_bytes_copied", "bytes copied by one decode step (cache rows + returned logits)"),
    ("kv_row_bytes", "bytes of the K/V rows one decode step adds"),
]
CHART_METRICS = ["ttft_seq_ms", "ttft_batched_ms", "tpot_ms", "compile_ms"]


# The bandwidth a decode floor divides the weight bytes by, the TPOT divided by that floor, and
# their rows' labels: the copy and read-only bandwidths sampled at the start of the run for each
# path's own TPOT, the read-only one's median over the interleaved rounds for the interleaved TPOT.
FLOORS = (
    ("copy_gbps", "tpot_ms", "TPOT floor (ms/token): weight bytes ÷ copy bandwidth", "TPOT ÷ copy floor"),
    ("read_gbps", "tpot_ms", "TPOT floor (ms/token): weight bytes ÷ read-only stream bandwidth",
     "TPOT ÷ read-only stream floor"),
    ("read_gbps_interleaved", "tpot_interleaved_ms",
     "TPOT floor, interleaved (ms/token): weight bytes ÷ read-only stream bandwidth sampled each round",
     "TPOT, interleaved ÷ that floor"),
)
# The GEMM peak a prefill floor divides the FLOPs by (f32's, or a bf16/f16 config's own dtype's
# where the run measured it), the TTFT divided by that floor, and their rows' labels ({} is the
# peak's dtype): one sample from the start of the run for each path's own TTFT, the median of the
# samples from every interleaved round for the interleaved TTFT.
COMPUTE_FLOORS = (
    (("half_gemm_gflops", "sgemm_gflops"), "ttft_batched_ms", "TTFT floor (ms): prefill FLOPs ÷ {} GEMM peak",
     "batched TTFT ÷ compute floor"),
    (("half_gemm_gflops_interleaved", "sgemm_gflops_interleaved"), "ttft_batched_interleaved_ms",
     "TTFT floor, interleaved (ms): prefill FLOPs ÷ {} GEMM peak sampled each round",
     "batched TTFT, interleaved ÷ that floor"),
)


def bandwidth_floor_ms(rows: list[dict[str, Any] | None], bandwidth: str = "copy_gbps") -> float | None:
    """The fastest a decode step can stream its weights on this machine, from any row of the
    config that has both terms (every path decodes the same model)."""
    for row in rows:
        if row and row.get("weight_bytes") and row.get(bandwidth):
            return row["weight_bytes"] / (row[bandwidth] * 1e9) * 1e3
    return None


def compute_floor_ms(rows: list[dict[str, Any] | None], peak: str = "sgemm_gflops") -> float | None:
    """The fastest the batched prefill's FLOPs run at the machine's GEMM peak `peak`: sgemm_gflops
    (sampled once at the start of the run) or sgemm_gflops_interleaved (sampled in every round of
    the interleaved timing), or a bf16/f16 config's half_gemm_gflops(_interleaved), the faster of
    its dtype's GEMM and sgemm's."""
    for row in rows:
        if row and row.get("prefill_flops") and row.get(peak):
            return row["prefill_flops"] / (row[peak] * 1e9) * 1e3
    return None


def floor_peak(rows: list[dict[str, Any] | None], peaks: tuple[str, str]) -> tuple[str, str]:
    """The peak column a config's floor uses, and that peak's dtype for the label: its own half
    dtype's where the run measured it (runs before 2026-12-06 did not), else f32's."""
    half, f32 = peaks
    for row in rows:
        if row and row.get(half):
            return half, row.get("dtype") or "half"
    return f32, "f32"


def by_config(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """config -> path -> row, configs in first-seen order."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        out.setdefault(row["config"], {})[row["path"]] = row
    return out


def speedup(row: dict | None, base: dict | None, metric: str, lower_is_better: bool) -> float | None:
    """base/row for times (> 1 = row is faster), row/base for rates: one direction for every metric."""
    if not row or not base or row.get(metric) in (None, 0) or base.get(metric) in (None, 0):
        return None
    return base[metric] / row[metric] if lower_is_better else row[metric] / base[metric]


def fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:,.{digits}f}" if abs(value) < 1e5 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def fmt_x(value: float | None) -> str:
    return "–" if value is None else f"{value:.2f}x"


def token_agreement(row: dict[str, Any] | None, eager: dict[str, Any] | None) -> str:
    """"yes", or "NO" with how many leading tokens agree: a near-tie that flips the last token
    (16 of 17) and a graph that decodes garbage (0 of 17) must not read alike."""
    if not row or row.get("tokens_match_eager") is None:
        return "–"
    if row["tokens_match_eager"]:
        return "yes"
    ours, theirs = row.get("tokens") or [], (eager or {}).get("tokens") or []
    leading = next((i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs)))
    return f"NO: the first {leading} of {len(theirs)} agree"


def table_header(paths: dict[str, dict[str, Any]]) -> list[str]:
    header = ["metric", "eager", "inductor", "luminal"] + ([SEARCH] if SEARCH in paths else [])
    header += ["inductor vs eager", "luminal vs eager", "luminal vs inductor"]
    return header + (["search vs luminal", "search vs inductor"] if SEARCH in paths else [])


def table_rows(paths: dict[str, dict[str, Any]]) -> list[list[str]]:
    """Rows of the side-by-side table for one config: metric, each path, then the speedup columns."""
    eager, inductor, luminal = (paths.get(p) for p in PATH_ORDER[:3])
    shown = [eager, inductor, luminal] + ([paths[SEARCH]] if SEARCH in paths else [])
    pairs = [(inductor, eager), (luminal, eager), (luminal, inductor)]
    if SEARCH in paths:
        pairs += [(paths[SEARCH], luminal), (paths[SEARCH], inductor)]
    rows = []
    for metric, label, lower in METRICS:
        if "_interleaved" in metric and not any(p and p.get(metric) for p in shown):
            continue  # a run with --no-interleaved, or from before interleaved.py
        cells = [label] + [fmt(p.get(metric)) if p else "–" for p in shown]
        cells += [fmt_x(speedup(row, base, metric, lower)) for row, base in pairs]
        rows.append(cells)

    def without_speedups(metric: str, label: str) -> list[str]:
        return [label] + [fmt(p.get(metric)) if p else "–" for p in shown] + [""] * len(pairs)

    def floor_rows(floor: float | None, floor_label: str, metric: str, ratio_label: str) -> None:
        """The floor's row and each path's `metric` divided by it."""
        if floor is None:
            return
        rows.append([floor_label] + [fmt(floor, 2)] * len(shown) + [""] * len(pairs))
        rows.append([ratio_label] + [fmt_x(p[metric] / floor) if p and p.get(metric) else "–" for p in shown]
                    + [""] * len(pairs))

    for bandwidth, metric, floor_label, ratio_label in FLOORS:
        floor_rows(bandwidth_floor_ms(shown, bandwidth), floor_label, metric, ratio_label)
    for peaks, metric, floor_label, ratio_label in COMPUTE_FLOORS:
        peak, dtype = floor_peak(shown, peaks)
        floor_rows(compute_floor_ms(shown, peak), floor_label.format(dtype), metric, ratio_label)
    for metric, label in COUNT_ROWS:
        if any(p and p.get(metric) is not None for p in shown):
            rows.append(without_speedups(metric, label))
    rows.append(without_speedups(*NOISE))
    match = ["greedy tokens = eager's", "(reference)"]
    match += [token_agreement(p, eager) for p in shown[1:]]
    rows.append(match + [""] * len(pairs))
    return rows


def markdown(run: dict[str, Any], rows: list[dict[str, Any]]) -> str:
    lines = [
        f"# TTFT / TPOT, run {run['run_id']}",
        "",
        f"commit `{run['git_commit']}` · {run['cpu_model']} · {run['cores']} cores · {run['ram_gb']} GB · "
        f"torch {run['torch_version']} · transformers {run['transformers_version']} · {run['threads']} threads",
        "",
        "Speedup columns: > 1 means the first path is faster (times: base / path; rates: path / base).",
        "Compile rows time the first call of each shape (compile + one run); eager's is its plain first call.",
        "Rows without \"interleaved\" come from each path's own process; the interleaved rows time every path in one "
        "process, one iteration each in turn, so drift of the machine and a process's luck with memory and cores hit "
        "all paths alike: their ratios are the ones to compare.",
        "\"Other processes' CPU\" is how busy the rest of the machine was meanwhile: above a few percent, times are "
        "inflated by contention.",
        "",
    ]
    for config, paths in by_config(rows).items():
        any_row = next(iter(paths.values()))
        if any_row.get("decode_tokens") == 0:
            work = (f"encoder: one forward of a {fmt(any_row.get('prompt_tokens'))}-token prompt per iteration "
                    "(the batched TTFT row); tokens = argmax id at every position")
        else:
            work = (f"prompt {fmt(any_row.get('prompt_tokens'))} tokens, "
                    f"decode {fmt(any_row.get('decode_tokens'))} tokens")
        lines += [
            f"## {config}",
            "",
            f"{any_row.get('model') or ''} {any_row.get('dtype') or ''}"
            + (f", torchao {any_row['quantization']} weights" if any_row.get("quantization") else "")
            + f", attention {any_row.get('attn_implementation') or '?'}, "
            f"{work}, {fmt(any_row.get('iters'))} iterations after {fmt(any_row.get('warmups'))} warmups; medians"
            + ("; compiled with dynamic=None (automatic dynamic)." if any_row.get("automatic_dynamic") else "."),
            "",
            "| " + " | ".join(table_header(paths)) + " |",
            "|" + "---|" * len(table_header(paths)),
        ]
        lines += ["| " + " | ".join(cells) + " |" for cells in table_rows(paths)]
        for path in PATH_ORDER:
            row = paths.get(path)
            if row and (row.get("error") or row.get("note")):
                kind = "ERROR" if row.get("error") else "note"
                text = (row.get("error") or row.get("note")).replace("\n", " ").replace("|", "\\|")[:600]
                lines.append(f"\n**{path} {kind}:** {text}")
        lines.append("")
    return "\n".join(lines)


def write_csv(rows: list[dict[str, Any]], path: Path) -> None:
    columns = ["run_id", "git_commit", "timestamp", *db.RESULT_COLUMNS]
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(columns)
        for row in rows:
            writer.writerow([json.dumps(row.get(c)) if isinstance(row.get(c), list) else row.get(c) for c in columns])


def write_png(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    configs = by_config(rows)
    present = [p for p in PATH_ORDER if any(p in paths for paths in configs.values())]
    fig, axes = plt.subplots(1, len(CHART_METRICS), figsize=(4.2 * len(CHART_METRICS), 4.2), squeeze=False)
    width = 0.8 / len(present)
    labels = dict((m, label) for m, label, _ in METRICS)
    for ax, metric in zip(axes[0], CHART_METRICS):
        values = [r[metric] for paths in configs.values() for r in paths.values() if r.get(metric)]
        for i, path_name in enumerate(present):
            for x, paths in enumerate(configs.values()):
                row = paths.get(path_name)
                pos = x - 0.4 + width * (i + 0.5)
                value = row.get(metric) if row else None
                if value:
                    ax.bar(pos, value, width, color=PATH_COLORS[path_name], label=path_name if x == 0 else None)
                    ax.annotate(fmt(value, 1 if value < 100 else 0), (pos, value), ha="center", va="bottom", fontsize=6)
                elif row:  # ran but has no value: failed, or the metric is not supported on that path
                    ax.text(pos, 0.5, "ERR" if row.get("error") else "n/a", rotation=90, ha="center", va="bottom",
                            fontsize=7, color="#c00000", transform=ax.get_xaxis_transform())
        if values and max(values) / min(values) > 20:  # e.g. compile vs eager's first call
            ax.set_yscale("log")
            # Bars start at a round decade, so their lengths read the same in every panel.
            ax.set_ylim(bottom=10 ** math.floor(math.log10(min(values))))
        ax.set_xticks(range(len(configs)), list(configs), rotation=20, ha="right", fontsize=8)
        ax.set_title(labels[metric], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=PATH_COLORS[p]) for p in present]
    fig.legend(handles, present, loc="upper right", ncol=len(present), fontsize=8)
    fig.suptitle(title, fontsize=10, x=0.01, ha="left")
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_latest(conn: sqlite3.Connection, out: Path) -> list[Path]:
    """ttft_latest.csv / .md and ttft.png for the newest run with TTFT rows; [] when there is none."""
    run = db.latest_run(conn, "results")
    if run is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    rows = db.load_rows(conn, "results", run["run_id"])
    paths = [out / "ttft_latest.csv", out / "ttft_latest.md", out / "ttft.png"]
    write_csv(rows, paths[0])
    paths[1].write_text(markdown(run, rows))
    title = (f"TTFT/TPOT run {run['run_id']} · commit {run['git_commit']} · {run['cpu_model']}, {run['threads']} threads"
             " · medians (log scale where values span > 20x)")
    busiest = max((r.get("other_cpu_pct") or 0 for r in rows), default=0)
    if busiest > 10:
        title += f"\nWARNING: other processes used up to {busiest:.0f}% of the CPU meanwhile: times are inflated"
    write_png(rows, paths[2], title)
    return paths
