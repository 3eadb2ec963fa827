#!/usr/bin/env bash
# minijax lint: the runtime (jit/runtime/) never includes the compiler — neither the IR
# (core/jaxpr.h), code generation (jit/codegen/: lowering, KIR, LLVM, ORC), the passes
# (jit/passes/, memory/), the pipeline and its executable (jit/pipeline.h, jit/executable.h) nor
# the reference interpreter (jit/reference/), directly or through any other header.
#
# Usage: tools/runtime_includes.sh CXX [FLAGS...] [-- FILE...]. Runs `CXX FLAGS -H -fsyntax-only`
# over each FILE (default: every jit/runtime/*.cc) and prints, for each forbidden header that
# appears in the output, the chain of includes that reached it; exits 1 if there is one (2 when a
# file does not compile). The CTest test lint_runtime_includes runs it with the library's include
# directories and definitions; lint_runtime_includes_detects runs it on jit/pipeline.cc, which
# must fail.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
[[ $# -ge 1 ]] || { echo "usage: $0 CXX [FLAGS...] [-- FILE...]" >&2; exit 2; }
cxx="$1"; shift
flags=(); files=()
while [[ $# -gt 0 ]]; do
  if [[ "$1" == "--" ]]; then shift; files=("$@"); break; fi
  flags+=("$1"); shift
done
[[ ${#files[@]} -eq 0 ]] && files=(jit/runtime/*.cc)
forbidden='(^|/)(core/jaxpr\.h|jit/codegen/|jit/passes/|jit/reference/|jit/pipeline\.h|jit/executable\.h|memory/)'
# One file: its forbidden includes, each with the chain that reached it (exit 2: does not compile).
check_one() {
  local f="$1" out
  if ! out="$("$cxx" "${flags[@]}" -H -fsyntax-only "$f" 2>&1 >/dev/null)"; then
    echo "$f: does not compile:"; echo "$out" | grep -v '^\.' | head -20; return 2
  fi
  # -H prints one line per header, its depth as leading dots: keep the chain to each header.
  printf '%s\n' "$out" | awk -v file="$f" -v re="$forbidden" -v root="$root/" '
    /^\.+ / {
      depth = index($0, " ") - 1; path = substr($0, depth + 2); sub(/^\.\//, "", path)
      if (index(path, root) == 1) path = substr(path, length(root) + 1)
      gsub(/\/\.\//, "/", path)
      chain[depth] = path
      if (path ~ re && !(path in seen)) {
        seen[path] = 1; line = file
        for (d = 1; d <= depth; ++d) line = line " -> " chain[d]
        print line
      }
    }'
}
# The files in parallel, one compiler per CPU; the reports in the files' order.
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
jobs_max="$(nproc 2>/dev/null || echo 2)"
for i in "${!files[@]}"; do
  while [[ "$(jobs -rp | wc -l)" -ge "$jobs_max" ]]; do wait -n || true; done
  ( check_one "${files[$i]}" >"$tmp/$i.out"; echo $? >"$tmp/$i.rc" ) &
done
wait
bad=0
for i in "${!files[@]}"; do
  rc="$(cat "$tmp/$i.rc")"
  cat "$tmp/$i.out"
  [[ "$rc" == 2 ]] && exit 2
  [[ -s "$tmp/$i.out" ]] && bad=1
done
if [[ $bad == 0 ]]; then
  echo "runtime_includes.sh: ${#files[@]} files; none includes the IR, the compiler or the reference executor"
fi
exit $bad
