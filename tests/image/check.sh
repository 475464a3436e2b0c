#!/usr/bin/env bash
# The images hack/build-image.sh makes: each root filesystem runs its binary as the image's
# non-root user (every shared library present: the loader lists none "not found", and the
# operator answers --version), and the OCI config says who runs what, with the
# org.opencontainers.image.* labels. The images share their Debian layer.
#   check.sh BUILD_DIR
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:?usage: check.sh BUILD_DIR}
out=$(mktemp -d "${TMPDIR:-/tmp}/pipescale-images.XXXXXX")
trap 'rm -rf "$out"' EXIT
PIPESCALE_BUILD_DIR=$build PIPESCALE_SKIP_BUILD=1 "$root/hack/build-image.sh" "$out" >/dev/null
version=$(sed -n 's/^project(pipescale VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")

for image in operator router model-server; do
  rootfs=$out/rootfs-$image
  binary=/usr/local/bin/pipescale-$image
  listed=$(chroot --userspec=65532:65532 "$rootfs" /lib64/ld-linux-x86-64.so.2 --list "$binary")
  if grep -q "not found" <<<"$listed"; then
    echo "$image: libraries missing from the image:" >&2
    grep "not found" <<<"$listed" >&2
    exit 1
  fi
  [[ -z $(find "$rootfs$binary" -perm /6000) ]] || { echo "$image: setuid binary" >&2; exit 1; }
done
answer=$(chroot --userspec=65532:65532 "$out/rootfs-operator" /usr/local/bin/pipescale-operator --version)
[[ $answer == "pipescale-operator $version" ]] || { echo "--version said: $answer" >&2; exit 1; }

# The config of each tag, read from the layout as a registry would serve it.
node - "$out/oci" "$version" <<'JS'
const fs = require('fs');
const [layout, version] = process.argv.slice(2);
const blob = (d) => JSON.parse(fs.readFileSync(`${layout}/blobs/${d.replace(':', '/')}`, 'utf8'));
const index = JSON.parse(fs.readFileSync(`${layout}/index.json`, 'utf8'));
const fail = (m) => { console.error(m); process.exit(1); };
const layers = {};
for (const name of ['operator', 'router', 'model-server']) {
  const entry = index.manifests.find((m) => m.annotations['org.opencontainers.image.ref.name'] === name);
  if (!entry) fail(`no tag ${name}`);
  const manifest = blob(entry.digest);
  const config = blob(manifest.config.digest).config;
  if (config.User !== '65532:65532') fail(`${name}: user ${config.User}`);
  if (JSON.stringify(config.Entrypoint) !== JSON.stringify([`/usr/local/bin/pipescale-${name}`])) {
    fail(`${name}: entrypoint ${config.Entrypoint}`);
  }
  const labels = config.Labels || {};
  for (const key of ['title', 'description', 'version', 'revision', 'created', 'source']) {
    if (!labels[`org.opencontainers.image.${key}`]) fail(`${name}: no label org.opencontainers.image.${key}`);
  }
  if (labels['org.opencontainers.image.version'] !== version) fail(`${name}: version label`);
  if (manifest.layers.length !== 2) fail(`${name}: ${manifest.layers.length} layers`);
  layers[name] = manifest.layers.map((l) => l.digest);
}
if (layers.operator[0] !== layers['model-server'][0] || layers.operator[0] !== layers.router[0]) {
  fail('the images do not share their base layer');
}
console.log('images: users, entrypoints, labels and layers as expected');
JS
