#!/usr/bin/env bash
# minijax lint: headers that only core/ may include stay inside core/. Today one: core/param_reads.h
# (Params' string-keyed reads, for core/'s typed views, rules, printer and parser).
#
# Usage: tools/core_only_headers.sh. Prints each file outside core/ that includes one of them and
# exits 1 if there is one. The CTest test lint_core_only_headers (label lint) runs it.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
headers=(core/param_reads.h)
bad=0
for h in "${headers[@]}"; do
  while IFS= read -r f; do
    [[ -z "$f" || "$f" == core/* ]] && continue
    echo "$f includes $h (core/ only: read a parameter through its primitive's typed view, core/views/)"
    bad=1
  done < <(grep -rlF "#include \"$h\"" --include='*.cc' --include='*.h' --include='*.cpp' \
             autodiff jit sharding memory io core tests samples bench include tools 2>/dev/null || true)
done
[[ $bad == 0 ]] && echo "core_only_headers.sh: no file outside core/ includes ${headers[*]}"
exit $bad
