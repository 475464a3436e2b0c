#!/usr/bin/env bash
# Runs clang-tidy (.clang-tidy: every enabled check is an error) on the src/, router/ and
# operator/ files changed since the last commit that passed CI (.ci/tidy-base; committed or not),
# or on all of them with PIPESCALE_TIDY_ALL=1; a file found clean before with every input as it is
# now is not checked again (the cache below).
# Usage: hack/tidy.sh [build-dir], after the build. hack/test.sh runs it beside ctest, which is
# what makes CI fail on a tidy error. PIPESCALE_SKIP_TIDY=1 skips it locally.
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

# Without PIPESCALE_TIDY_ALL, what a submission touches: every file changed since the last
# commit that passed CI, which .ci/tidy-base names (every file there was checked: what lands has
# passed this very check), uncommitted and untracked files included; a header's change checks a
# unit that includes it. Had it been the merge base with origin/main, a clone of main (CI's) would
# compare HEAD with itself and check nothing of the commits it brings. A .ci/tidy-base left
# behind costs time, never a check: the files changed since an older commit include these. When
# it names no ancestor of HEAD (a shallow clone, a rewritten history), or .clang-tidy or this
# script changed since (either can fail any file), every file is checked.
files=()
base=$(sed -n 's/^\([0-9a-f]\{40\}\)$/\1/p' .ci/tidy-base 2>/dev/null | head -n 1)
if [[ -z $base ]] || ! git merge-base --is-ancestor "$base" HEAD 2>/dev/null; then
  echo "hack/tidy.sh: .ci/tidy-base names no ancestor of HEAD: every file is checked"
  PIPESCALE_TIDY_ALL=1
elif ! git diff --quiet "$base" -- .clang-tidy hack/tidy.sh; then
  echo "hack/tidy.sh: .clang-tidy or hack/tidy.sh changed since ${base:0:12}: every file is checked"
  PIPESCALE_TIDY_ALL=1
fi
if [[ ${PIPESCALE_TIDY_ALL:-0} == 1 ]]; then
  scope="all of src/, router/ and operator/"
  files=("${units[@]}")
else
  scope="changed since ${base:0:12}, the last commit that passed CI"
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

# Clean results are remembered outside the tree (as ccache's are), by everything a unit's result
# depends on: the content of every file its compilation reads (ninja's record of the build's
# dependencies: its headers, the system's included), its compile command, the .clang-tidy files,
# this script and clang-tidy's version. A unit whose inputs are all as they were when it was last
# found clean is not checked again; errors are never remembered. So the full check on a machine
# that ran one before checks what changed since, in whichever commits and through whichever
# header, at the cost of hashing the inputs (2 s for all); on a new machine it checks everything.
# Paths within the clone and the build directory are kept relative, so clones elsewhere share it.
# PIPESCALE_TIDY_CACHE names its directory, or `off`.
cache=${PIPESCALE_TIDY_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pipescale/tidy}
declare -A key_of=()
if [[ $cache != off ]]; then
  mkdir -p "$cache"
  find "$cache" -type f -mtime +30 -delete 2>/dev/null || true
  work=$(mktemp -d)
  # awk: `s` with each `from` replaced by `to`, taken literally (paths hold regex characters);
  # relative(p): p with the build and the clone's directories as placeholders.
  functions='
    function literal(s, from, to,   at, out) {
      out = ""
      while ((at = index(s, from)) > 0) {
        out = out substr(s, 1, at - 1) to
        s = substr(s, at + length(from))
      }
      return out s
    }
    function relative(p) { return literal(literal(p, build, "@BUILD@"), root, "@ROOT@") }'
  # Each unit's object file (ninja's name for its compilation) and command, paths relative.
  awk -v root="$root" -v build="$build" "$functions"'
    /^ *"command":/ { command = $0; sub(/^ *"command": *"/, "", command); sub(/",?$/, "", command) }
    /^ *"file":/ {
      file = $0; sub(/^ *"file": *"/, "", file); sub(/",?$/, "", file)
      object = ""
      if (match(command, / -o [^ ]+/)) object = substr(command, RSTART + 4, RLENGTH - 4)
      print literal(file, root "/", "") "\t" object "\t" relative(command)
    }' "$build/compile_commands.json" >"$work/commands"
  declare -A object_of=()
  while IFS=$'\t' read -r file object _; do object_of[$file]=$object; done <"$work/commands"
  objects=()
  for f in "${files[@]}"; do
    if [[ -n ${object_of[$f]:-} ]]; then objects+=("${object_of[$f]}"); fi
  done
  # What each compilation read, for the objects ninja has up to date (VALID) records of (with no
  # object named, ninja would list every target's).
  if ((${#objects[@]} == 0)); then objects=(none); fi
  ninja -C "$build" -t deps "${objects[@]}" 2>/dev/null |
    awk '/^[^ ].*: #deps/ { target = $1; sub(/:$/, "", target); valid = /\(VALID\)/ }
         /^    / && valid { sub(/^ +/, ""); print target "\t" $0 }' >"$work/deps" || true
  cut -f2 "$work/deps" | sort -u | (cd "$build" && xargs -r -d '\n' sha256sum) >"$work/hashes" ||
    true
  salt=$({
    clang-tidy --version
    cat hack/tidy.sh .clang-tidy
    find src router operator -name .clang-tidy -exec cat {} +
  } | sha256sum | cut -c1-64)
  # One manifest per unit: the salt, its command, and each file it read with its content's hash.
  mkdir -p "$work/manifests"
  awk -v salt="$salt" -v root="$root" -v build="$build" -v dir="$work/manifests" "$functions"'
    FILENAME ~ /hashes$/ { h = $1; $1 = ""; sub(/^ +/, ""); hash[$0] = h; next }
    FILENAME ~ /commands$/ {
      split($0, c, "\t"); unit_of[c[2]] = c[1]; command_of[c[2]] = c[3]; next
    }
    {
      split($0, d, "\t")
      if (!(d[1] in unit_of)) next
      name = unit_of[d[1]]; gsub(/\//, "_", name); out = dir "/" name
      if (d[1] != last) {
        if (last != "") close(last_out)
        print salt > out; print command_of[d[1]] > out
        last = d[1]; last_out = out
      }
      print relative(d[2]) " " hash[d[2]] > out
    }' "$work/hashes" "$work/commands" "$work/deps"
  declare -A unit_of_manifest=()
  for f in "${files[@]}"; do unit_of_manifest[${f//\//_}]=$f; done
  while read -r key manifest; do
    unit=${unit_of_manifest[${manifest##*/}]:-}
    if [[ -n $unit ]]; then key_of[$unit]=$key; fi
  done < <(cd "$work/manifests" && find . -type f -printf '%f\n' | xargs -r sha256sum)
  rm -rf "$work"
  # What was clean at these very inputs is not checked again.
  unchecked=()
  for f in "${files[@]}"; do
    key=${key_of[$f]:-}
    if [[ -n $key && -e $cache/$key ]]; then
      touch "$cache/$key"  # kept while it is used
    else
      unchecked+=("$f")
    fi
  done
  echo "hack/tidy.sh: $((${#files[@]} - ${#unchecked[@]})) of ${#files[@]} files ($scope)" \
    "found clean before at these very inputs"
  scope+=", not found clean before"
  files=("${unchecked[@]}")
  if ((${#files[@]} == 0)); then
    echo "hack/tidy.sh: clean"
    exit 0
  fi
fi
logs=$build/tidy
rm -rf "$logs"
mkdir -p "$logs"
echo "hack/tidy.sh: ${#files[@]} files ($scope), $jobs at a time"

# Checks unit $1; remembers it clean under key $2, if any.
check_one() {
  local f=$1 key=$2 log start status=ok
  log=$TIDY_LOGS/${f//\//_}.log
  start=$SECONDS
  if ! clang-tidy -p "$TIDY_BUILD" --quiet "$f" >"$log" 2>&1; then
    status=FAILED
    echo "$f" >>"$TIDY_LOGS/failed"
  elif grep -qE '^[^ ].*: error: ' "$log"; then
    status="errors"
  elif [[ -n $key && $TIDY_CACHE != off ]]; then
    touch "$TIDY_CACHE/$key"
  fi
  echo "  $f: $status ($((SECONDS - start)) s)"
}
export -f check_one
export TIDY_LOGS=$logs TIDY_BUILD=$build TIDY_CACHE=$cache
start=$SECONDS
for f in "${files[@]}"; do printf '%s\n%s\n' "$f" "${key_of[$f]:-}"; done |
  xargs -d '\n' -n 2 -P "$jobs" bash -c 'check_one "$1" "$2"' _
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
