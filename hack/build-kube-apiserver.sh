#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager and kube-scheduler v1.20.2 once from Debian's
# `kubernetes` source package (offline: the source ships its vendor/ tree) into a cache outside
# the repo, and prints the apiserver's path (the other two sit beside it). Later runs only print
# the path. About 4 minutes on 2 cores the first time (3.5 on 2026-12-02).
#
# The vendored modern-go/reflect2 1.0.1 crashes Go 1.19 builds on the first custom-resource
# write (json-iterator's map encoder), so it is swapped for Debian's reflect2 1.0.2.
set -euo pipefail
cache=${PIPESCALE_CACHE:-/var/cache/pipescale}
bin="$cache/kube-v1.20.2/kube-apiserver"
if [[ -x $bin && -x $(dirname "$bin")/kube-controller-manager && -x $(dirname "$bin")/kube-scheduler ]]; then
  echo "$bin"
  exit 0
fi

export DEBIAN_FRONTEND=noninteractive
need=()
for p in golang-go rsync golang-github-modern-go-reflect2-dev dpkg-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
done
src_list=/etc/apt/sources.list.d/pipescale-deb-src.sources
if [[ ! -f $src_list ]]; then
  # Source entries for the same mirror the machine already uses.
  sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources >"$src_list"
  apt-get update -qq
fi
if ((${#need[@]})); then apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null; fi

work=$(mktemp -d "${TMPDIR:-/tmp}/kas-build.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
echo "building kube-apiserver, kube-controller-manager and kube-scheduler v1.20.2 from Debian's source (~4 min, once)" >&2
apt-get source --download-only -qq kubernetes >/dev/null
tar xzf kubernetes_*.orig.tar.gz
tree=$(find . -maxdepth 1 -type d -name 'kubernetes-*' | head -1)
reflect2="$tree/vendor/github.com/modern-go/reflect2"
rm -rf "$reflect2" && mkdir -p "$reflect2"
cp -r /usr/share/gocode/src/github.com/modern-go/reflect2/. "$reflect2/"
rm -f "$reflect2/go.mod"

cd "$tree"
export GOCACHE="$work/gocache" GOPROXY=off CGO_ENABLED=0 HOME="$work/home"
mkdir -p "$HOME"
make WHAT="cmd/kube-apiserver cmd/kube-controller-manager cmd/kube-scheduler" >"$work/build.log" 2>&1 ||
  { tail -40 "$work/build.log" >&2; exit 1; }
mkdir -p "$(dirname "$bin")"
for b in kube-controller-manager kube-scheduler kube-apiserver; do  # the apiserver last: it marks completion
  install -m 0755 "_output/bin/$b" "$(dirname "$bin")/$b.tmp"
  mv "$(dirname "$bin")/$b.tmp" "$(dirname "$bin")/$b"
done
echo "$bin"
