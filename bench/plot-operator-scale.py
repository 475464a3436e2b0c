#!/usr/bin/env python3
"""Draws bench/operator-scale.csv (operator_bench --only scale at each N) as docs/operator-scale.svg:
four panels against the number of pipelines, with the goals of issue 29 and KEDA's published
figure. Standard library only: `python3 bench/plot-operator-scale.py`."""
import csv
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
rows = list(csv.DictReader(open(os.path.join(ROOT, "bench", "operator-scale.csv"))))
n = [float(r["pipelines"]) for r in rows]

# (title, unit, [(column, label, colour)], goal line or None, band (lo, hi, label) or None)
PANELS = [
    ("Interval lag: time since a pipeline's last decision", "s",
     [("lag_p50_s", "p50", "#1f77b4"), ("lag_p99_s", "p99", "#d62728")], (10, "goal p99 <= 10 s"), None),
    ("Resident memory (VmRSS, steady)", "MiB",
     [("rss_mib", "pipescale-operator", "#1f77b4")], (250, "goal < 250 MiB"),
     (95, 191, "KEDA operator: 100-200 MB for hundreds of ScaledObjects")),
    ("Requests the operator adds, steady", "per s",
     [("apiserver_rps", "kube-apiserver requests", "#9467bd"),
      ("prometheus_qps", "Prometheus queries", "#2ca02c")], None, None),
    ("Operator start to every pipeline planned", "s",
     [("all_planned_s", "all planned", "#ff7f0e")], None, None),
]
W, H, PW, PH, L, T = 920, 640, 360, 200, 70, 60


def panel(i, title, unit, series, goal, band):
    x0, y0 = L + (i % 2) * (PW + 100), T + (i // 2) * (PH + 110)
    ymax = max([float(r[c]) for r in rows for c, _, _ in series] + [goal[0] if goal else 0] +
               [band[1] if band else 0]) * 1.15
    sx = lambda v: x0 + PW * v / (max(n) * 1.05)
    sy = lambda v: y0 + PH - PH * v / ymax
    out = [f'<text x="{x0}" y="{y0 - 12}" font-weight="bold">{title}</text>',
           f'<rect x="{x0}" y="{y0}" width="{PW}" height="{PH}" fill="none" stroke="#999"/>']
    for k in range(5):
        v = ymax * k / 4
        out.append(f'<text x="{x0 - 6}" y="{sy(v) + 4:.1f}" text-anchor="end" font-size="11">{v:.0f}</text>')
    for v in n:
        out.append(f'<text x="{sx(v):.1f}" y="{y0 + PH + 15}" text-anchor="middle" font-size="11">{v:.0f}</text>')
    out.append(f'<text x="{x0 + PW / 2}" y="{y0 + PH + 32}" text-anchor="middle" font-size="11">pipelines ({unit} on the left)</text>')
    if band:
        out.append(f'<rect x="{x0}" y="{sy(band[1]):.1f}" width="{PW}" height="{sy(band[0]) - sy(band[1]):.1f}" fill="#2ca02c" opacity="0.15"/>')
        out.append(f'<text x="{x0 + 4}" y="{sy(band[1]) - 3:.1f}" font-size="10" fill="#2ca02c">{band[2]}</text>')
    if goal:
        out.append(f'<line x1="{x0}" x2="{x0 + PW}" y1="{sy(goal[0]):.1f}" y2="{sy(goal[0]):.1f}" stroke="#000" stroke-dasharray="5,4"/>')
        out.append(f'<text x="{x0 + PW - 4}" y="{sy(goal[0]) - 4:.1f}" text-anchor="end" font-size="10">{goal[1]}</text>')
    for j, (col, label, colour) in enumerate(series):
        pts = " ".join(f"{sx(v):.1f},{sy(float(r[col])):.1f}" for v, r in zip(n, rows))
        out.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for v, r in zip(n, rows):
            out.append(f'<circle cx="{sx(v):.1f}" cy="{sy(float(r[col])):.1f}" r="3" fill="{colour}"/>')
        out.append(f'<text x="{x0 + 8}" y="{y0 + 16 + 14 * j}" font-size="11" fill="{colour}">{label}</text>')
    return out


svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" font-family="sans-serif" font-size="12">',
       f'<rect width="{W}" height="{H}" fill="white"/>',
       f'<text x="{L}" y="24" font-size="15" font-weight="bold">One pipescale-operator, N pipelines, '
       f'on the cluster in a box (2 cores, 2 workers, 10 s interval)</text>']
for i, p in enumerate(PANELS):
    svg += panel(i, *p)
svg.append("</svg>")
open(os.path.join(ROOT, "docs", "operator-scale.svg"), "w").write("\n".join(svg) + "\n")
