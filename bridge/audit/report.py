"""The audit's HTML report: one self-contained file, plots as inline SVG. Pure, no I/O.

Nothing is loaded from elsewhere (no script, stylesheet, font or image URL), so the file can
be mailed, attached to a ticket or opened on a machine without network. Plots:

* lag per group - what each store's offsets leave unread, side by side;
* divergence per group - sum of ``kafka - zookeeper`` over its partitions, left when
  ZooKeeper is ahead, right when Kafka is, with the number of differing partitions;
* commit activity - Kafka commits per group per time bucket (a heat map), with the total
  over all groups above it.

Groups are ordered most urgent first (blocked, then roll back, migrate, finalize); past
``limit`` groups the plots and table stop and say how many were left out (the Parquet
tables always hold all of them).
"""

from __future__ import annotations

import datetime as dt
import html
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

from bridge.audit.verdict import BLOCKED, READY_TO_FINALIZE, READY_TO_MIGRATE, READY_TO_ROLL_BACK

COLORS = {
    READY_TO_FINALIZE: "#2e7d32",
    READY_TO_MIGRATE: "#1565c0",
    READY_TO_ROLL_BACK: "#ef6c00",
    BLOCKED: "#c62828",
}
ORDER = {BLOCKED: 0, READY_TO_ROLL_BACK: 1, READY_TO_MIGRATE: 2, READY_TO_FINALIZE: 3}
ZK_COLOR, KAFKA_COLOR = "#8e24aa", "#00897b"

CSS = """
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:6px 0}td,th{border:1px solid #ddd;padding:3px 7px;
vertical-align:top;text-align:left}th{background:#f5f5f5}td.n{text-align:right;
font-variant-numeric:tabular-nums}.badge{display:inline-block;padding:1px 8px;border-radius:9px;
color:#fff;font-size:12px;white-space:nowrap}.muted{color:#777}.unknown{background:#fff3e0}
ul{margin:0;padding-left:18px}svg{display:block;margin:6px 0;background:#fff}
details{margin:2px 0}summary{cursor:pointer}.cards span{display:inline-block;margin-right:18px}
"""


def _e(v: Any) -> str:
    return html.escape("" if v is None else str(v), quote=True)


def _ts(ms: Any) -> str:
    if ms is None:
        return "-"
    return dt.datetime.fromtimestamp(ms / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")


def _num(v: Any, digits: int = 0) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:,.{digits or 2}f}"
    return f"{v:,}"


def _badge(verdict: str) -> str:
    color = COLORS.get(verdict, "#555")
    return f'<span class="badge" style="background:{color}">{_e(verdict)}</span>'


def _anchor(group: str) -> str:
    return "g-" + "".join(c if c.isalnum() else f"_{ord(c):x}" for c in group)


# -- plots --------------------------------------------------------------------------------------

LABEL_W, ROW_H, PLOT_W = 260, 18, 760


def _label(i: int, text: str) -> str:
    y = 20 + i * ROW_H + ROW_H * 0.7
    shown = text if len(text) <= 36 else text[:35] + "…"
    return (
        f'<text x="{LABEL_W - 6}" y="{y:.1f}" text-anchor="end" font-size="11">'
        f"<title>{_e(text)}</title>{_e(shown)}</text>"
    )


def lag_plot(groups: Sequence[dict[str, Any]]) -> str:
    """Horizontal bars: ZooKeeper lag and Kafka lag per group."""
    vmax = max([g.get(k) or 0 for g in groups for k in ("zk_lag", "kafka_lag")] + [1])
    h = 30 + len(groups) * ROW_H
    out = [
        f'<svg id="plot-lag" data-plot="lag" width="{LABEL_W + PLOT_W + 80}" height="{h}" '
        f'xmlns="http://www.w3.org/2000/svg" role="img"><title>Lag per group</title>',
        f'<rect x="{LABEL_W}" y="2" width="10" height="10" fill="{ZK_COLOR}"/>'
        f'<text x="{LABEL_W + 14}" y="11" font-size="11">ZooKeeper lag</text>'
        f'<rect x="{LABEL_W + 110}" y="2" width="10" height="10" fill="{KAFKA_COLOR}"/>'
        f'<text x="{LABEL_W + 124}" y="11" font-size="11">Kafka lag</text>',
    ]
    for i, g in enumerate(groups):
        out.append(_label(i, g["group"]))
        for j, (key, color) in enumerate((("zk_lag", ZK_COLOR), ("kafka_lag", KAFKA_COLOR))):
            v = g.get(key)
            y = 20 + i * ROW_H + 2 + j * 7
            w = 0 if not v else max(1.0, PLOT_W * v / vmax)
            store = "ZooKeeper" if j == 0 else "Kafka"
            out.append(
                f'<rect class="bar" x="{LABEL_W}" y="{y}" width="{w:.1f}" height="6" '
                f'fill="{color}"><title>{_e(g["group"])}: {store} lag {_num(v)}</title></rect>'
            )
        text = f"{_num(g.get('zk_lag'))} / {_num(g.get('kafka_lag'))}"
        out.append(
            f'<text x="{LABEL_W + PLOT_W + 4}" y="{20 + i * ROW_H + 12}" font-size="10" '
            f'fill="#555">{_e(text)}</text>'
        )
    out.append("</svg>")
    return "".join(out)


def divergence_plot(groups: Sequence[dict[str, Any]]) -> str:
    """Diverging bars around zero: summed ``kafka - zookeeper`` per group."""
    vmax = max([abs(g.get("total_difference") or 0) for g in groups] + [1])
    mid = LABEL_W + PLOT_W / 2
    h = 30 + len(groups) * ROW_H
    out = [
        f'<svg id="plot-divergence" data-plot="divergence" width="{LABEL_W + PLOT_W + 120}" '
        f'height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">'
        "<title>Divergence per group</title>",
        f'<text x="{mid - 6}" y="11" font-size="11" text-anchor="end">← ZooKeeper ahead</text>'
        f'<text x="{mid + 6}" y="11" font-size="11">Kafka ahead →</text>'
        f'<line x1="{mid}" y1="14" x2="{mid}" y2="{h}" stroke="#999"/>',
    ]
    for i, g in enumerate(groups):
        out.append(_label(i, g["group"]))
        d = g.get("total_difference") or 0
        w = 0 if d == 0 else max(1.0, (PLOT_W / 2) * abs(d) / vmax)
        x = mid if d >= 0 else mid - w
        color = KAFKA_COLOR if d > 0 else ZK_COLOR
        y = 20 + i * ROW_H + 3
        n = g.get("diverged_partitions") or 0
        out.append(
            f'<rect class="bar" x="{x:.1f}" y="{y}" width="{w:.1f}" height="11" fill="{color}">'
            f"<title>{_e(g['group'])}: kafka - zookeeper = {_num(d)} over {n} differing "
            f"partition(s)</title></rect>"
        )
        out.append(
            f'<text x="{LABEL_W + PLOT_W + 4}" y="{y + 9}" font-size="10" fill="#555">'
            f"{_e(_num(d))} ({n} differ)</text>"
        )
    out.append("</svg>")
    return "".join(out)


def _activity_rows(
    groups: Sequence[str],
    cells: dict[tuple[str, int], int],
    column: Callable[[int], int],
    cw: float,
    top_h: int,
) -> list[str]:
    """One heat-map row per group: a cell per bucket with commits, darker with more."""
    vmax = max(cells.values())
    per_group: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for (grp, b), c in cells.items():
        per_group[grp].append((b, c))
    out = []
    for gi, g in enumerate(groups):
        y = top_h + 30 + gi * ROW_H
        out.append(
            f'<text x="{LABEL_W - 6}" y="{y + 12}" text-anchor="end" font-size="11">'
            f"<title>{_e(g)}</title>{_e(g if len(g) <= 36 else g[:35] + '…')}</text>"
        )
        for b, c in per_group.get(g, []):
            alpha = 0.15 + 0.85 * c / vmax
            out.append(
                f'<rect class="cell" x="{LABEL_W + column(b) * cw:.1f}" y="{y + 1}" '
                f'width="{max(cw - 1, 1):.1f}" height="{ROW_H - 2}" fill="{KAFKA_COLOR}" '
                f'fill-opacity="{alpha:.2f}"><title>{_e(g)} {_ts(b)}: {c} commits</title></rect>'
            )
    return out


def activity_plot(groups: Sequence[str], activity: Sequence[dict[str, Any]], bucket_ms: int) -> str:
    """A heat map of commits per group and time bucket, the total per bucket above it."""
    cells: dict[tuple[str, int], int] = {}
    for a in activity:
        cells[(a["group"], a["bucket_start_ms"])] = a["commits"]
    buckets = sorted({b for _, b in cells})
    if not buckets:
        return (
            '<svg id="plot-activity" data-plot="activity" width="600" height="30" '
            'xmlns="http://www.w3.org/2000/svg"><text x="4" y="20" font-size="12">'
            "no Kafka commits recorded</text></svg>"
        )
    first, last = buckets[0], buckets[-1]
    n = (last - first) // bucket_ms + 1 if bucket_ms else len(buckets)
    cw = max(2.0, PLOT_W / max(n, 1))
    totals: dict[int, int] = defaultdict(int)
    for (_, b), c in cells.items():
        totals[b] += c
    top_h = 60
    tmax = max(totals.values())
    h = top_h + 30 + len(groups) * ROW_H + 24
    out = [
        f'<svg id="plot-activity" data-plot="activity" width="{LABEL_W + n * cw + 80:.0f}" '
        f'height="{h}" xmlns="http://www.w3.org/2000/svg" role="img">'
        "<title>Commit activity over time</title>",
        f'<text x="{LABEL_W - 6}" y="{top_h / 2 + 10}" font-size="11" text-anchor="end">'
        "all groups</text>",
    ]

    def column(b: int) -> int:
        return (b - first) // bucket_ms if bucket_ms else buckets.index(b)

    for b, c in sorted(totals.items()):
        i = column(b)
        bh = max(1.0, (top_h - 10) * c / tmax)
        out.append(
            f'<rect class="bar" x="{LABEL_W + i * cw:.1f}" y="{top_h - bh + 10:.1f}" '
            f'width="{max(cw - 1, 1):.1f}" height="{bh:.1f}" fill="#546e7a">'
            f"<title>{_ts(b)}: {c} commits</title></rect>"
        )
    out += _activity_rows(groups, cells, column, cw, top_h)
    ybot = top_h + 30 + len(groups) * ROW_H + 16
    out.append(
        f'<text x="{LABEL_W}" y="{ybot}" font-size="10" fill="#555">{_ts(first)} UTC</text>'
        f'<text x="{LABEL_W + n * cw:.0f}" y="{ybot}" font-size="10" fill="#555" '
        f'text-anchor="end">{_ts(last + bucket_ms)} UTC</text>'
    )
    out.append("</svg>")
    return "".join(out)


# -- the page -----------------------------------------------------------------------------------


def _versions_table(versions: Sequence[dict[str, Any]]) -> str:
    rows = []
    for v in sorted(
        versions,
        key=lambda v: (v["key_kind"], v.get("key_version") or -1, v.get("value_version") or -1),
    ):
        cls = "" if v["known"] else ' class="unknown"'
        value = v["value_kind"] + (
            f" v{v['value_version']}" if v.get("value_version") is not None else ""
        )
        key = v["key_kind"] + (f" v{v['key_version']}" if v.get("key_version") is not None else "")
        rows.append(
            f"<tr{cls}><td>{_e(key)}</td><td>{_e(value)}</td>"
            f'<td class="n">{_num(v["records"])}</td><td>{"yes" if v["known"] else "no"}</td></tr>'
        )
    return (
        "<table><tr><th>key</th><th>value</th><th>records</th><th>decoded</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def _partition_table(parts: Sequence[dict[str, Any]]) -> str:
    head = (
        "<tr><th>topic</th><th>partition</th><th>ZooKeeper</th><th>Kafka</th>"
        "<th>difference</th><th>log end</th><th>ZK lag</th><th>Kafka lag</th>"
        "<th>ZK last commit</th><th>Kafka last commit</th><th>Kafka commits/min</th>"
        "<th>problems</th></tr>"
    )
    rows = []
    for p in parts:
        problems = "; ".join(
            x
            for x in (
                p.get("zk_error"),
                p.get("kafka_error"),
                "Kafka offset deleted (tombstone)" if p.get("kafka_deleted") else None,
            )
            if x
        )
        rows.append(
            f"<tr><td>{_e(p['topic'])}</td><td class='n'>{_e(p['partition'])}</td>"
            f"<td class='n'>{_num(p.get('zk_offset'))}</td>"
            f"<td class='n'>{_num(p.get('kafka_offset'))}</td>"
            f"<td class='n'>{_num(p.get('difference'))}</td>"
            f"<td class='n'>{_num(p.get('log_end_offset'))}</td>"
            f"<td class='n'>{_num(p.get('zk_lag'))}</td>"
            f"<td class='n'>{_num(p.get('kafka_lag'))}</td>"
            f"<td>{_ts(p.get('zk_last_commit_ms'))}</td>"
            f"<td>{_ts(p.get('kafka_last_commit_ms'))}</td>"
            f"<td class='n'>{_num(p.get('kafka_commits_per_min'), 2)}</td>"
            f"<td>{_e(problems)}</td></tr>"
        )
    return "<table>" + head + "".join(rows) + "</table>"


def urgent_first(groups: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Blocked first, then roll back, migrate, finalize; by name within each."""
    return sorted(groups, key=lambda g: (ORDER.get(g["verdict"], 9), g["group"]))


def _group_row(g: dict[str, Any]) -> str:
    """One group's row of the groups table: verdict, reasons, counts, lag, last commits."""
    reasons = "".join(f"<li>{_e(r)}</li>" for r in g.get("reasons") or [])
    notes = "".join(f"<li class='muted'>{_e(n)}</li>" for n in g.get("notes") or [])
    return (
        f"<tr id='{_anchor(g['group'])}'><td><b>{_e(g['group'])}</b></td>"
        f"<td>{_badge(g['verdict'])}</td><td><ul>{reasons}{notes}</ul></td>"
        f"<td class='n'>{_num(g.get('partitions'))}</td>"
        f"<td class='n'>{_num(g.get('zk_partitions'))} / {_num(g.get('kafka_partitions'))}</td>"
        f"<td class='n'>{_num(g.get('equal_partitions'))}</td>"
        f"<td class='n'>{_num(g.get('lag'))}</td>"
        f"<td>{_ts(g.get('zk_last_commit_ms'))}<br>{_ts(g.get('kafka_last_commit_ms'))}</td>"
        "</tr>"
    )


def _details(shown: Sequence[dict[str, Any]], partitions: Sequence[dict[str, Any]]) -> str:
    """Each shown group's partitions, folded."""
    by_group: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in partitions:
        by_group[p["group"]].append(p)
    details = []
    for g in shown:
        parts = sorted(by_group.get(g["group"], []), key=lambda p: (p["topic"], p["partition"]))
        details.append(
            f"<details><summary>{_e(g['group'])} - {len(parts)} partition(s)</summary>"
            f"{_partition_table(parts)}</details>"
        )
    return "".join(details)


def _header(summary: dict[str, Any], title: str) -> list[str]:
    """Title, where the data came from, the verdict counts and what was read."""
    verdicts = summary.get("verdicts", {})
    cards = "".join(
        f"<span>{_badge(v)} {verdicts.get(v, 0)}</span>"
        for v in (READY_TO_FINALIZE, READY_TO_MIGRATE, READY_TO_ROLL_BACK, BLOCKED)
    )
    unknown = summary.get("unknown_version_records", 0)
    return [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>{title}</title><style>{CSS}</style></head><body>",
        f"<h1>{title}</h1>",
        f"<p class='muted'>generated {_ts(summary.get('generated_ms'))} UTC from "
        f"{_e(summary.get('source'))} and the ZooKeeper snapshot "
        f"{_e(summary.get('snapshot'))}"
        + (
            f", groups matching <code>{_e(summary['group_filter'])}</code>"
            if summary.get("group_filter")
            else ""
        )
        + "</p>",
        f"<p class='cards'>{cards}</p>",
        f"<p>{_num(summary.get('records'))} records of __consumer_offsets read, "
        f"{_num(summary.get('groups'))} groups, {_num(summary.get('partitions'))} partitions; "
        f"<b>{_num(unknown)}</b> records of versions this decoder does not read.</p>",
    ]


def _plots(
    summary: dict[str, Any],
    shown: Sequence[dict[str, Any]],
    versions: Sequence[dict[str, Any]],
    activity: Sequence[dict[str, Any]],
) -> list[str]:
    """Record versions, lag, divergence and commit activity."""
    bucket = summary.get("activity_bucket_ms") or 0
    return [
        "<h2>Record versions</h2>",
        _versions_table(versions),
        "<h2>Lag per group</h2><p class='muted'>messages between each store's committed "
        "offset and the log end, summed over the group's partitions</p>",
        lag_plot(shown),
        "<h2>Divergence per group</h2><p class='muted'>sum of (Kafka offset - ZooKeeper "
        "offset) over partitions both stores hold</p>",
        divergence_plot(shown),
        f"<h2>Commit activity over time</h2><p class='muted'>Kafka commits per group, "
        f"{bucket / 1000:.0f}-second buckets</p>",
        activity_plot([g["group"] for g in shown], activity, bucket),
    ]


def render(
    summary: dict[str, Any],
    groups: Sequence[dict[str, Any]],
    partitions: Sequence[dict[str, Any]],
    versions: Sequence[dict[str, Any]],
    activity: Sequence[dict[str, Any]],
    limit: int = 2000,
) -> str:
    """The whole report as one HTML string."""
    ordered = urgent_first(groups)
    shown = ordered[:limit]
    left_out = len(ordered) - len(shown)
    more = f"<p class='muted'>{left_out} more groups are in groups.parquet only.</p>"
    return "".join(
        [
            *_header(summary, "kafka-zk-bridge migration audit"),
            *_plots(summary, shown, versions, activity),
            "<h2>Groups</h2>",
            more if left_out else "",
            "<table><tr><th>group</th><th>verdict</th><th>reasons and notes</th>"
            "<th>partitions</th><th>ZK / Kafka</th><th>equal</th><th>lag</th>"
            "<th>last commit ZK / Kafka</th></tr>",
            "".join(_group_row(g) for g in shown),
            "</table><h2>Partitions</h2>",
            _details(shown, partitions),
            "</body></html>",
        ]
    )
