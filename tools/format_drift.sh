#!/usr/bin/env bash
# minijax format check: how far the library's code is from .clang-format, the style it already has.
# Owns the drift figure: the lines clang-format-19 would change, over the library's lines (nothing is rewritten).
#
# Usage: tools/format_drift.sh [--max-percent P] [--files N]
#   --max-percent P  exit 1 when the changed lines are over P percent of the library's lines
#   --files N        also print the N files with the most changed lines (count, lines, path)
# The library: every `.cc` and `.h` that `git ls-files` lists under core autodiff sharding memory
# jit io (recursively), plus include/minijax/*.h.
# How a file's changed lines are counted: `diff FILE <(clang-format-19 FILE)` (normal format, so
# every hunk is `Nc M`, `Nd M` or `Na M`); a changed (c) or deleted (d) hunk counts its original
# lines (the `<` lines), an added (a) hunk, which has none, counts its added lines (the `>` lines).
# Total lines: `wc -l` of the same files. Prints one JSON line:
#   {"changed_lines": C, "total_lines": T, "percent": P, "files": F}
# Exit status 1 over --max-percent, 2 on a usage or tool error.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
max_percent="" top=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --max-percent) max_percent="${2:?--max-percent needs a value}"; shift ;;
    --files) top="${2:?--files needs a value}"; shift ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "format_drift.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
command -v clang-format-19 >/dev/null ||
  { echo "format_drift.sh: clang-format-19 not found (run ./setup.sh, which installs it)" >&2; exit 2; }

cd "$root"
[[ -f .clang-format ]] || { echo "format_drift.sh: no .clang-format at $root" >&2; exit 2; }

# One file: prints `changed total path`.
drift_of() {
  local f="$1" formatted changed total
  [[ -f "$f" ]] || return 0  # listed by git but deleted in the work tree
  formatted="$(clang-format-19 --style=file "$f")" ||
    { echo "format_drift.sh: clang-format-19 failed on $f" >&2; exit 255; }
  changed="$(diff "$f" <(printf '%s\n' "$formatted") | awk '
    /^[0-9]/ { kind = ($0 ~ /a/) ? "a" : "o"; next }
    /^</ { if (kind == "o") n++ }
    /^>/ { if (kind == "a") n++ }
    END { print n + 0 }')"
  total="$(wc -l <"$f")"
  echo "$changed $total $f"
}
export -f drift_of

per_file="$(git ls-files -z -- core autodiff sharding memory jit io 'include/minijax/*.h' |
  grep -zE '\.(cc|h)$' |
  nice -n 10 xargs -0 -r -P 2 -n 1 bash -c 'drift_of "$1"' _)" || exit 2
[[ -n "$per_file" ]] || { echo "format_drift.sh: no library files found" >&2; exit 2; }

if [[ "$top" -gt 0 ]]; then
  printf '%s\n' "$per_file" | sort -k1,1nr | head -n "$top" >&2
fi
read -r changed total files percent < <(printf '%s\n' "$per_file" | awk '
  { c += $1; t += $2; n++ }
  END { printf "%d %d %d %.2f\n", c, t, n, (t ? 100 * c / t : 0) }')
printf '{"changed_lines": %d, "total_lines": %d, "percent": %s, "files": %d}\n' \
  "$changed" "$total" "$percent" "$files"

if [[ -n "$max_percent" ]] && awk -v p="$percent" -v m="$max_percent" 'BEGIN { exit !(p > m) }'; then
  echo "format_drift.sh: $percent% of the library's lines would change, over --max-percent $max_percent" >&2
  exit 1
fi
