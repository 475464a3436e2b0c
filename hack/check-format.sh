#!/usr/bin/env bash
# Fails when a C++ source differs from .clang-format's layout; prints the offending files.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src tests bench operator -name '*.cc' -o -name '*.h')
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if ((${#bad[@]})); then
  echo "not clang-formatted (run: clang-format -i ${bad[*]}):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "clang-format: ${#files[@]} files clean"
