#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy: every enabled check is an error) on the src/, router/ and
# operator/ files changed since the merge base with origin/main, or on all of them with
# PIPESCALE_TIDY_ALL=1.
# Usage: hack/tidy.sh [build-dir]. hack/test.sh runs it; PIPESCALE_SKIP_TIDY=1 skips it locally.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-${PIPESCALE_BUILD_DIR:-$root/build}}
jobs=${PIPESCALE_TIDY_JOBS:-2}

if [[ ${PIPESCALE_SKIP_TIDY:-0} == 1 ]]; then
  echo "hack/tidy.sh: skipped (PIPESCALE_SKIP_TIDY=1)"
  exit 0
fi
if [[ ! -f $build/compile_commands.json ]]; then
  echo "hack/tidy.sh: no $build/compile_commands.json; configure the build first" >&2
  exit 1
fi
build=$(cd "$build" && pwd)
cd "$root"

# The project's own translation units, which the build lists with absolute paths.
mapfile -t units < <(grep -o '"file": *"[^"]*"' "$build/compile_commands.json" |
  sed -E 's/^"file": *"(.*)"$/\1/; s#^'"$root"'/##' | grep -E '^(src|router|operator)/' | sort -u)
declare -A is_unit=()
for u in "${units[@]}"; do is_unit[$u]=1; done

# The unit that checks header $1: its own .cc, else the first unit including it, directly or
# through other headers (their own .cc first).
unit_for() {
  local queue=("$1") seen=" " h inc f
  while ((${#queue[@]})); do
    h=${queue[0]}
    queue=("${queue[@]:1}")
    if [[ $seen == *" $h "* ]]; then continue; fi
    seen+="$h "
    if [[ -n ${is_unit[${h%.h}.cc]:-} ]]; then
      echo "${h%.h}.cc"
      return
    fi
    inc=${h#src/}
    inc=${inc#operator/}
    while read -r f; do
      if [[ -n ${is_unit[$f]:-} ]]; then
        echo "$f"
        return
      fi
      if [[ $f == *.h ]]; then queue+=("$f"); fi
    done < <(grep -rlF --include='*.cc' --include='*.h' "#include \"$inc\"" src router operator | sort)
  done
  return 0
}

# CI checks what a change touches: all 48 units take 5 minutes on 2 idle cores (2-35 s of CPU
# each), past its budget for this step, while none of the last 25 commits touched more than 20
# (2 minutes). Touched is changed since the merge base with origin/main (HEAD~1 without an
# origin), uncommitted and untracked files included. A change to .clang-tidy or to this script
# checks everything, as does a history with no base (a shallow clone).
base=$(git merge-base HEAD origin/main 2>/dev/null || true)
# A clone of main itself (CI's clean clone) has HEAD as its merge base: check the last commit.
if [[ -z $base || $base == $(git rev-parse HEAD) ]]; then
  base=$(git rev-parse -q --verify HEAD~1 || true)
fi
files=()
if [[ ${PIPESCALE_TIDY_ALL:-0} == 1 || -z $base ]] ||
  ! git diff --quiet "$base" -- .clang-tidy hack/tidy.sh; then
  scope="all of src/, router/ and operator/"
  files=("${units[@]}")
else
  scope="changed since ${base:0:12}"
  mapfile -t changed < <({
    git diff --name-only --diff-filter=d "$base" -- src router operator
    git ls-files --others --exclude-standard -- src router operator
  } | grep -E '\.(cc|h)$' | sort -u)
  declare -A want=()
  for f in "${changed[@]}"; do
    unit=$f
    if [[ $f == *.h ]]; then unit=$(unit_for "$f"); fi
    if [[ -n $unit && -n ${is_unit[$unit]:-} ]]; then want[$unit]=1; fi
  done
  for u in "${units[@]}"; do
    if [[ -n ${want[$u]:-} ]]; then files+=("$u"); fi
  done
fi

if ((${#files[@]} == 0)); then
  echo "hack/tidy.sh: nothing to check ($scope)"
  exit 0
fi
logs=$build/tidy
rm -rf "$logs"
mkdir -p "$logs"
echo "hack/tidy.sh: ${#files[@]} files ($scope), $jobs at a time"

check_one() {
  local f=$1 log start status=ok
  log=$TIDY_LOGS/${f//\//_}.log
  start=$SECONDS
  if ! clang-tidy -p "$TIDY_BUILD" --quiet "$f" >"$log" 2>&1; then
    status=FAILED
    echo "$f" >>"$TIDY_LOGS/failed"
  fi
  echo "  $f: $status ($((SECONDS - start)) s)"
}
export -f check_one
export TIDY_LOGS=$logs TIDY_BUILD=$build
start=$SECONDS
printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} bash -c 'check_one "$1"' _ {}
echo "hack/tidy.sh: ${#files[@]} files in $((SECONDS - start)) s"

# A header's diagnostics repeat in every unit including it: each is listed once.
mapfile -t errors < <(cat "$logs"/*.log | grep -E '^[^ ].*: error: ' | sed "s#^$root/##" | sort -u)
if ((${#errors[@]})); then
  echo "hack/tidy.sh: ${#errors[@]} errors (each with its source line in $logs):" >&2
  printf '  %s\n' "${errors[@]}" >&2
  exit 1
fi
if [[ -s $logs/failed ]]; then
  echo "hack/tidy.sh: clang-tidy failed on (see $logs):" >&2
  sed 's/^/  /' "$logs/failed" >&2
  exit 1
fi
echo "hack/tidy.sh: clean"
