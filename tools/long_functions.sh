#!/usr/bin/env bash
# minijax lint: lists every function of the library (core autodiff jit sharding memory io) over
# 120 lines, as Universal Ctags measures it, that tools/long_functions.allow does not list.
#
# Usage: tools/long_functions.sh [--limit N] [--all]
#   --limit N  the longest allowed function, in lines (default 120)
#   --all      also print the allowed ones (marked "allowed")
# Length = end - line + 1 (ctags' `line:` and `end:` fields). Exit status 1 if one is not allowed,
# 2 on a usage or tool error. The CTest test `lint_long_functions` (label lint) runs it.
#
# An allow-list line is `KEY  # reason`, KEY being `file|scope|name`: the scope is ctags' `scope`
# field (namespace:... or function:...) with every anonymous `__anonHEX` written `__anon` (its hash
# changes between edits); for an anonymous function (a lambda) the name is `__anon` followed by
# `@` and the text of its first line (ctags' pattern), so that the key stays put.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
limit=120 all=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --limit) limit="$2"; shift ;;
    --all) all=1 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "long_functions.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
command -v ctags >/dev/null || { echo "long_functions.sh: ctags not found (universal-ctags, setup.sh)" >&2; exit 2; }
ctags --version 2>/dev/null | grep -q 'Universal Ctags' ||
  { echo "long_functions.sh: ctags is not Universal Ctags (universal-ctags, setup.sh)" >&2; exit 2; }

cd "$root"
allow="$root/tools/long_functions.allow"
tags="$(ctags -R --languages=C++ --c++-kinds=f --fields=+ne -f - core autodiff jit sharding memory io)"
# One line per long function: length, key.
long="$(printf '%s\n' "$tags" | awk -F'\t' -v limit="$limit" '
  {
    name = $1; file = $2; pat = $3; line = ""; end = ""; scope = "-"
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^line:/) line = substr($i, 6)
      else if ($i ~ /^end:/) end = substr($i, 5)
      else if ($i ~ /^(namespace|function|class|struct):/) scope = $i
    }
    if (line == "" || end == "") next
    len = end - line + 1
    if (len <= limit) next
    gsub(/__anon[0-9a-f]+/, "__anon", scope)
    if (name ~ /^__anon[0-9a-f]+$/) {
      sub(/^\/\^/, "", pat); sub(/\$\/;"$/, "", pat); sub(/^[ \t]+/, "", pat)
      name = "__anon@" pat
    }
    printf "%d\t%s|%s|%s\t%s:%s\n", len, file, scope, name, file, line
  }' | sort -rn)"

bad=0
while IFS=$'\t' read -r len key where; do
  [[ -z "$len" ]] && continue
  if [[ -f "$allow" ]] && grep -vE '^\s*(#|$)' "$allow" | sed -E 's/[[:space:]]+#.*$//' | grep -qxF -- "$key"; then
    [[ $all == 1 ]] && echo "allowed  $len lines  $where  $key"
  else
    echo "TOO LONG $len lines  $where  $key"
    bad=1
  fi
done <<<"$long"
if [[ $bad == 1 ]]; then
  echo "long_functions.sh: functions over $limit lines (split them into named phases, or allow a" \
       "registration table in tools/long_functions.allow with its reason)" >&2
  exit 1
fi
echo "long_functions.sh: no function over $limit lines outside tools/long_functions.allow"
