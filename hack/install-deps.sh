#!/usr/bin/env bash
# Installs every Debian package the build, the tests and the benchmarks need. Idempotent:
# packages already present are skipped without touching the network.
set -euo pipefail

# hack/packages/build.txt and test.txt, one package per line, '#' comments.
mapfile -t packages < <(sed 's/#.*//; /^[[:space:]]*$/d' "$(dirname "$0")"/packages/{build,test}.txt)

# kubectl (tests and the demo talk to the local apiserver with it): Debian's kubernetes-client,
# unless the machine already has a kubectl of its own.
command -v kubectl >/dev/null 2>&1 || packages+=(kubernetes-client)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "hack/install-deps.sh: missing packages (${missing[*]}); run as root to install them" >&2
  exit 1
fi
echo "hack/install-deps.sh: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
