#!/usr/bin/env bash
# Fails when a C++ source differs from .clang-format's layout; prints the offending files.
# One clang-format for all files (its start-up is most of the cost: 2 s here against 64 s
# file by file); only when that fails are the files checked one by one, to name them.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h' 2>/dev/null || find src tests bench operator -name '*.cc' -o -name '*.h')
present=()
for f in "${files[@]}"; do [[ -f $f ]] && present+=("$f"); done
if clang-format --dry-run --Werror "${present[@]}" >/dev/null 2>&1; then
  echo "clang-format: ${#present[@]} files clean"
  exit 0
fi
bad=()
for f in "${present[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
((${#bad[@]})) || { echo "clang-format failed on the files together but on none alone" >&2; exit 1; }
echo "not clang-formatted (run: clang-format -i ${bad[*]}):" >&2
printf '  %s\n' "${bad[@]}" >&2
exit 1
