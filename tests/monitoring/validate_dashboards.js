// Validates Grafana dashboards against the JSON Schema generated from @grafana/schema's
// Dashboard type (the classic dashboard model), strict about unknown fields.
//   node validate_dashboards.js TOOLS_DIR DASHBOARD.json...
// TOOLS_DIR is hack/install-tools.sh's directory. Exits 1 naming each error.
'use strict';
const path = require('path');
const fs = require('fs');
const tools = process.argv[2];
const need = (m) => require(path.join(tools, 'node_modules', m));
const tsj = need('ts-json-schema-generator');
const Ajv = need('ajv');

const schema = tsj.createGenerator({
  path: path.join(tools, 'node_modules/@grafana/schema/dist/types/raw/dashboard/x/types.gen.d.ts'),
  type: 'Dashboard',
  skipTypeCheck: true,
}).createSchema('Dashboard');
// An annotation query keeps its data source's own fields beside Grafana's (Prometheus: expr,
// step, titleFormat), which the generated type does not list.
schema.definitions.AnnotationQuery.additionalProperties = true;
const validate = new Ajv({allErrors: true, strict: false}).compile(schema);

let failed = 0;
for (const file of process.argv.slice(3)) {
  const dashboard = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (validate(dashboard)) {
    console.log(`${path.basename(file)}: valid`);
    continue;
  }
  failed++;
  for (const e of validate.errors) {
    console.log(`${path.basename(file)}: ${e.instancePath || '/'} ${e.message} ${JSON.stringify(e.params)}`);
  }
}
process.exit(failed ? 1 : 0);
