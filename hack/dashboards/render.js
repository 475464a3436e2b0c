// Draws a Grafana dashboard of ours from a Prometheus as a static HTML page (uPlot, the library
// Grafana's time series panels use), for a screenshot: Grafana itself is not installable here.
//   node render.js TOOLS_DIR DASHBOARD.json PROMETHEUS_URL NAMESPACE PIPELINE START END OUT.html
// START and END are unix seconds. Panels keep their grid positions (24 columns), titles,
// legends and units; a stat panel shows each series' last value.
'use strict';
const fs = require('fs');
const path = require('path');
const [tools, file, prometheus, namespace, pipeline, start, end, out] = process.argv.slice(2);
const dashboard = JSON.parse(fs.readFileSync(file, 'utf8'));
const uplot = path.join(tools, 'node_modules/uplot/dist');
const step = Math.max(2, Math.round((end - start) / 300));

const substitute = (expr) => expr.replace(/\$\{?namespace\}?/g, namespace)
  .replace(/\$\{?pipeline\}?/g, pipeline).replace(/\$\{?__(interval|rate_interval|range)\}?/g, '1m');
const legend = (format, metric) =>
  (format || '').replace(/\{\{\s*(\w+)\s*\}\}/g, (_, k) => metric[k] || '').trim() || JSON.stringify(metric);

async function series(expr) {
  const url = `${prometheus}/api/v1/query_range?` + new URLSearchParams(
    {query: substitute(expr), start, end, step: String(step)});
  const body = await (await fetch(url)).json();
  if (body.status !== 'success') throw new Error(`${expr}: ${body.error}`);
  return body.data.result;
}

async function main() {
  const panels = [];
  for (const p of dashboard.panels) {
    const defaults = (p.fieldConfig || {}).defaults || {};
    const panel = {type: p.type, title: p.title, grid: p.gridPos, unit: defaults.unit, min: defaults.min,
                   max: defaults.max, log: defaults.custom?.scaleDistribution?.type === 'log', series: []};
    for (const t of p.targets || []) {
      for (const r of await series(t.expr)) {
        panel.series.push({label: legend(t.legendFormat, r.metric),
                           dashed: /^SLO /.test(legend(t.legendFormat, r.metric)),
                           // NaN (0/0 over a quiet window) and +Inf (a quantile in the top
                           // bucket) are gaps, as Grafana draws NaN; uPlot's axis breaks on them.
                           points: r.values.map(([ts, v]) => [ts, Number.isFinite(Number(v)) ? Number(v) : null])});
      }
    }
    panels.push(panel);
  }
  const page = `<!doctype html><html><head><meta charset="utf-8"><title>${dashboard.title}</title>
<style>${fs.readFileSync(path.join(uplot, 'uPlot.min.css'), 'utf8')}
body{margin:0;background:#111217;color:#ccccdc;font:13px Inter,Helvetica,Arial,sans-serif}
header{padding:10px 16px;font-size:18px}header small{color:#8e8e9e;font-size:13px;margin-left:12px}
#grid{position:relative;margin:0 8px}.panel{position:absolute;box-sizing:border-box;background:#181b1f;border:1px solid #2c3235;border-radius:2px;padding:6px 8px;overflow:hidden}
.panel h3{margin:0 0 4px;font-size:13px;font-weight:500}.row{position:absolute;font-size:15px;font-weight:500;padding-top:6px}
.stat{font-size:34px;font-weight:500;color:#73bf69;margin:10px 6px}.stat small{display:block;font-size:12px;color:#8e8e9e}
.u-legend{font-size:11px;text-align:left;line-height:1.1}.u-legend th{font-weight:normal}.u-axis{color:#8e8e9e}.nodata{color:#8e8e9e;margin:30px}</style>
<script>${fs.readFileSync(path.join(uplot, 'uPlot.iife.min.js'), 'utf8')}</script></head><body>
<header>${dashboard.title}${dashboard.uid === 'pipescale-pipeline' ? `<small>namespace ${namespace}, pipeline ${pipeline}</small>` : ''}</header>
<div id="grid"></div><script>
const panels = ${JSON.stringify(panels)};
const W = 1600 - 16, col = W / 24, row = 30;
const colors = ['#73bf69','#f2cc0c','#5794f2','#ff9830','#f2495c','#b877d9','#8ab8ff','#96d98d','#ffb357','#ca95e5'];
const fmt = (unit, v) => v == null ? '' : unit === 'percentunit' ? (100 * v).toFixed(1) + '%' : unit === 'ms' ? v.toFixed(0) + ' ms'
  : unit === 's' ? (v < 1 ? (1000 * v).toFixed(1) + ' ms' : v.toFixed(2) + ' s') : unit === 'reqps' ? v.toFixed(1) + ' req/s'
  : unit === 'ops' ? v.toFixed(2) + '/s' : unit === 'currencyUSD' ? '$' + v.toFixed(2) : Math.abs(v) >= 100 ? v.toFixed(0) : +v.toFixed(2);
let bottom = 0;
for (const p of panels) {
  const el = document.createElement('div');
  const g = p.grid;
  el.style.left = (g.x * col) + 'px'; el.style.top = (g.y * row) + 'px';
  el.style.width = (g.w * col - 6) + 'px'; el.style.height = (g.h * row - 6) + 'px';
  bottom = Math.max(bottom, (g.y + g.h) * row);
  document.getElementById('grid').appendChild(el);
  if (p.type === 'row') { el.className = 'row'; el.textContent = p.title; continue; }
  el.className = 'panel';
  el.innerHTML = '<h3>' + p.title + '</h3>';
  if (!p.series.length) { el.innerHTML += '<div class="nodata">No data</div>'; continue; }
  if (p.type === 'stat') {
    for (const s of p.series) el.innerHTML += '<div class="stat">' + fmt(p.unit, s.points[s.points.length - 1][1]) + '<small>' + s.label + '</small></div>';
    continue;
  }
  const legendRows = Math.ceil(p.series.length / Math.max(1, Math.floor(g.w / 4)));
  const times = [...new Set(p.series.flatMap(s => s.points.map(q => q[0])))].sort((a, b) => a - b);
  const data = [times, ...p.series.map(s => { const m = new Map(s.points); return times.map(t => m.has(t) ? m.get(t) : null); })];
  new uPlot({
    width: g.w * col - 24, height: Math.max(80, g.h * row - 40 - 15 * legendRows), legend: {show: true, live: false},
    scales: {x: {time: true}, y: p.log ? {distr: 3, log: 10} : {range: (u, lo, hi) => [p.min ?? Math.min(0, lo), p.max ?? (hi > lo ? hi * 1.05 : lo + 1)]}},
    axes: [{stroke: '#8e8e9e', grid: {stroke: '#2c3235'}}, {stroke: '#8e8e9e', grid: {stroke: '#2c3235'}, size: 80, values: (u, vs) => vs.map(v => fmt(p.unit, v))}],
    series: [{}, ...p.series.map((s, i) => ({label: s.label, stroke: colors[i % colors.length], width: 2, dash: s.dashed ? [8, 6] : undefined, spanGaps: true,
                                             value: (u, v) => fmt(p.unit, v)}))],
  }, data, el);
}
document.getElementById('grid').style.height = bottom + 'px';
document.title = 'rendered';
</script></body></html>`;
  fs.writeFileSync(out, page);
  const height = Math.max(...panels.map(p => (p.grid.y + p.grid.h) * 30)) + 60;
  console.log(height);
}
main().catch((e) => { console.error(e.message); process.exit(1); });
