// Prints every PromQL expression of Grafana dashboards (panel targets and annotation queries)
// with the template variables replaced:
//   node dashboard_queries.js rules NAMESPACE PIPELINE DASHBOARD.json...   a Prometheus rules
//       file (JSON, which is YAML) with one recording rule per expression, for promtool
//   node dashboard_queries.js list NAMESPACE PIPELINE DASHBOARD.json...    one JSON object per
//       line: {dashboard, panel, expr}
'use strict';
const fs = require('fs');
const path = require('path');
const [mode, namespace, pipeline, ...files] = process.argv.slice(2);

const substitute = (expr) => expr
  .replace(/\$\{?namespace\}?/g, namespace)
  .replace(/\$\{?pipeline\}?/g, pipeline)
  .replace(/\$\{?__(interval|rate_interval|range)\}?/g, '1m');

const queries = [];
for (const file of files) {
  const d = JSON.parse(fs.readFileSync(file, 'utf8'));
  const dashboard = path.basename(file, '.json');
  for (const p of d.panels || []) {
    for (const t of p.targets || []) {
      if (t.expr) queries.push({dashboard, panel: `${p.title} (${t.refId})`, expr: substitute(t.expr)});
    }
  }
  for (const a of (d.annotations || {}).list || []) {
    if (a.expr) queries.push({dashboard, panel: `annotation ${a.name}`, expr: substitute(a.expr)});
  }
}
if (mode === 'rules') {
  const rules = queries.map((q, i) => ({record: `pipescale:dashboard_query_${i}`, expr: q.expr}));
  console.log(JSON.stringify({groups: [{name: 'dashboards', rules}]}, null, 1));
} else {
  for (const q of queries) console.log(JSON.stringify(q));
}
