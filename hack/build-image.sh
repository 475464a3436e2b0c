#!/usr/bin/env bash
# Builds pipescale's images without a container engine or a registry, from the Dockerfile's
# recipe: the runtime root filesystem is Debian bookworm with hack/packages/runtime.txt
# (debootstrap from the machine's Debian mirror, cached outside the repo), the binaries go in
# a layer of their own, and umoci writes an OCI image layout:
#   hack/build-image.sh [OUT]      default OUT: build/images
#     OUT/oci                  an OCI image layout with the tags operator, router and model-server
#                              (push with: skopeo copy oci:OUT/oci:operator docker://REGISTRY/pipescale/operator:VERSION)
#     OUT/rootfs-IMAGE         each image's root filesystem, for chroot
# The first run downloads about 40 MB of packages (about 2 minutes); later runs take seconds.
# PIPESCALE_SKIP_BUILD=1 takes the binaries as they are in the build directory.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${PIPESCALE_BUILD_DIR:-$root/build}
out=${1:-$build/images}
cache=${PIPESCALE_CACHE:-/var/cache/pipescale}/image
version=$(sed -n 's/^project(pipescale VERSION \([0-9.]*\).*/\1/p' "$root/CMakeLists.txt")
packages=$(sed 's/#.*//; /^[[:space:]]*$/d' "$root/hack/packages/runtime.txt" | paste -sd, -)
for tool in debootstrap umoci; do
  command -v "$tool" >/dev/null || { echo "build-image: needs $tool (hack/install-deps.sh)" >&2; exit 1; }
done

# The base: one tarball per package list (its comments aside).
base=$cache/rootfs-$(sha256sum <<<"$packages" | cut -c1-16).tar
if [[ ! -f $base ]]; then
  mirror=$(sed -n 's/^URIs: *//p' /etc/apt/sources.list.d/debian.sources 2>/dev/null | head -1)
  echo "build-image: Debian bookworm with $packages (debootstrap from ${mirror:-deb.debian.org}, about 2 minutes, once)" >&2
  work=$(mktemp -d "${TMPDIR:-/tmp}/pipescale-rootfs.XXXXXX")
  trap 'rm -rf "$work"' EXIT
  debootstrap --variant=minbase --include="$packages" bookworm "$work/rootfs" \
    "${mirror:-http://deb.debian.org/debian}" >"$work/debootstrap.log" 2>&1 || {
    tail -20 "$work/debootstrap.log" >&2
    exit 1
  }
  # What a running image never reads: package caches, indexes, documentation.
  rm -rf "$work"/rootfs/var/cache/apt/* "$work"/rootfs/var/lib/apt/lists/* \
    "$work"/rootfs/usr/share/{doc,man,info}/*
  mkdir -p "$cache"
  tar -C "$work/rootfs" --numeric-owner -cf "$base.tmp" . && mv "$base.tmp" "$base"
fi

if [[ ${PIPESCALE_SKIP_BUILD:-0} != 1 ]]; then
  export CCACHE_BASEDIR=$root
  # With -g ccache would hash the build directory too, and a clone elsewhere would miss.
  export CCACHE_NOHASHDIR=1
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
  cmake --build "$build" --target pipescale-operator pipescale-model-server pipescale-router >/dev/null
fi

declare -A binaries=(
  [operator]=$build/operator/pipescale-operator
  [model-server]=$build/tests/emulator/pipescale-model-server
  [router]=$build/router/pipescale-router
)
declare -A descriptions=(
  [operator]="Autoscales ML inference pipelines to their latency SLOs at the lowest cost"
  [model-server]="An emulated model server (Open Inference Protocol) with a latency profile"
  [router]="A pipeline's front door: walks its DAG over the model pods and measures every path"
)
revision=$(git -C "$root" rev-parse HEAD 2>/dev/null || echo unknown)
created=$(date -u +%Y-%m-%dT%H:%M:%SZ)
rm -rf "$out/oci" "$out/base"
mkdir -p "$out/base"
tar -C "$out/base" -xf "$base"
umoci init --layout "$out/oci"
for image in operator router model-server; do
  binary=/usr/local/bin/pipescale-$image
  rootfs=$out/rootfs-$image
  rm -rf "$rootfs" && cp -a "$out/base" "$rootfs"
  install -D -m 0755 -s "${binaries[$image]}" "$rootfs$binary"
  umoci new --image "$out/oci:$image"
  # The Debian base and the binary in layers of their own, as the Dockerfile's stages make
  # them: images share the first.
  umoci insert --image "$out/oci:$image" "$out/base" /
  umoci insert --image "$out/oci:$image" "$rootfs$binary" "$binary"
  umoci config --image "$out/oci:$image" --config.user 65532:65532 \
    --config.entrypoint "$binary" --config.workingdir / \
    --config.label "org.opencontainers.image.title=pipescale-$image" \
    --config.label "org.opencontainers.image.description=${descriptions[$image]}" \
    --config.label "org.opencontainers.image.version=$version" \
    --config.label "org.opencontainers.image.revision=$revision" \
    --config.label "org.opencontainers.image.created=$created" \
    --config.label "org.opencontainers.image.source=https://github.com/pipescale/pipescale" \
    --config.label "org.opencontainers.image.vendor=pipescale"
done
rm -rf "$out/base"
umoci gc --layout "$out/oci"
echo "$out/oci"
