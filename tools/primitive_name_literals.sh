#!/usr/bin/env bash
# minijax lint: every string literal equal to a registered primitive's name in the library outside
# core/primitives/ (where primitives are defined), core/views/ (the typed views), and registrations.
#
# Usage: tools/primitive_name_literals.sh [--names FILE | --names-program PROGRAM] [--max N]
#   --names FILE             the registered names, one per line
#   --names-program PROGRAM  a program printing them (default: build/tools/minijax_primitive_names,
#                            which the build makes from tools/primitive_names.cc)
#   --max N                  the most literals allowed (default 10)
# Prints `file:line: "name": text` for each literal found. Exit status 1 if there are more than N,
# or if one of them has no comment on its line saying why it stays; 2 on a usage error.
#
# Not counted (each a place where the name is the primitive's identity, not a fact about it):
# - registrations: the literal is an argument of get_or_create_primitive(...), primitive(...)
#   (the registry lookup that binds it, as JAX's `lax.mul_p.bind`), find_primitive(...), a
#   register*/def* call, a rule table's key (`rules["exp"] = ...` or an entry `{"exp", rule}`), or
#   a `for (... : {"add", "sub"})` list whose loop body registers (get_or_create_primitive);
# - a parameter key (`name`, which calls and fusions have as the checkpoint_name primitive is named):
#   set("name", ...), has("name"), param_string(p, "name"), .add("name", ...), key == "name";
# - a value of all_reduce's `reduction` param compared with it (`reduction == "max"`);
# - an enumerator's printed name (`case CollectiveKind::all_gather: return "all_gather";`);
# - another vocabulary's word: an argument of intrinsic(...) (LLVM's llvm.sqrt), call_outlined(...)
#   or BasicBlock::Create(...);
# - comments and error messages (only a literal that is exactly a name counts).
# A name written any other way (a comparison, `is(e, "scan")`, a set of names, a constant such as
# `kScan = "scan"`) is counted.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
names="" program="$root/build/tools/minijax_primitive_names" max=10
while [[ $# -gt 0 ]]; do
  case "$1" in
    --names) names="$2"; shift ;;
    --names-program) program="$2"; shift ;;
    --max) max="$2"; shift ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "primitive_name_literals.sh: unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done
if [[ -z "$names" ]]; then
  [[ -x "$program" ]] || { echo "primitive_name_literals.sh: $program not found (build the target minijax_primitive_names)" >&2; exit 2; }
  names="$(mktemp)"
  trap 'rm -f "$names"' EXIT
  "$program" >"$names"
fi
exec python3 - "$root" "$names" "$max" <<'PY'
import os, re, sys
root, names_file, limit = sys.argv[1], sys.argv[2], int(sys.argv[3])
names = {l.strip() for l in open(names_file) if l.strip()}
if not names:
    sys.exit("primitive_name_literals.sh: no primitive names read")
lit = re.compile(r'"((?:[^"\\]|\\.)*)"')
# A call that registers (or looks up to bind) the primitive it names.
REG = r'(get_or_create_primitive|find_primitive|(?<![\w.>])primitive|(?<![\w.>])set|[Rr]egister\w*|def_\w+)\s*\('
registering_call = re.compile(REG + r'\s*$|[Rr]egister\w*\s+\w+\s*[({]\s*$')
registration_statement = re.compile(r'^\s*(const\s+|static\s+)*(' + REG + r'|[Rr]egister\w*\s+\w+\s*[({]|\w+\s*\[\s*"|'
                                    r'\w+(\.|->)(jvp|transpose|batch|dce|shape_rule|impl|cost)\s*=)')

# A parameter key: set("name", ...), has("name"), param_string(p, "name"), .add("name", ...),
# key == "name", or the printer's key order.
key_context = re.compile(r'(\b(set|has|add)\(\s*|\bparam_\w+\([^()]*,\s*|\bkey\s*[!=]=\s*'
                         r'|\border\.(begin|end)\(\)\s*,\s*)$')
# The printed name of an enumerator: `case Kind::x: return "x";`.
enum_name = re.compile(r'case\s+[\w:]*::(\w+)\s*:\s*return\s*$')
# Another vocabulary that shares a word with a primitive: LLVM's intrinsics (llvm.sqrt) and basic
# block names, and the names of the outlined math functions (jit/codegen/lower/transcendentals.h).
other_vocabulary = re.compile(r'\b(intrinsic|call_outlined|BasicBlock::Create)\([^()]*$')

# A value of all_reduce's `reduction` param ("sum", "max", "min"), compared with it.
reduction_value = re.compile(r'\b(reduction|red)\s*[!=]=\s*$')

def split_comment(line):
    in_str = False
    for k, ch in enumerate(line):
        if ch == '"' and (k == 0 or line[k - 1] != "\\"):
            in_str = not in_str
        if not in_str and line.startswith("//", k):
            return line[:k], line[k:]
    return line, ""

found = []
for top in ["core", "autodiff", "jit", "sharding", "memory", "io"]:
    for d, _, files in os.walk(os.path.join(root, top)):
        rel_d = os.path.relpath(d, root)
        if rel_d.startswith(("core/primitives", "core/views")):
            continue
        for f in sorted(files):
            if not f.endswith((".cc", ".h")):
                continue
            path = os.path.join(rel_d, f)
            lines = open(os.path.join(root, path), encoding="utf-8", errors="replace").read().split("\n")
            code = [split_comment(l) for l in lines]
            # The line each statement starts at (after a line ending in ; { or }).
            start, cur = [], 0
            for i, (c, _) in enumerate(code):
                if cur == i and (not c.strip() or c.strip().startswith("#")):
                    cur = i + 1  # blank, comment-only or preprocessor lines start no statement
                start.append(min(cur, i))
                if re.search(r'[;{}]\s*$', c):
                    cur = i + 1
            for i, (c, comment) in enumerate(code):
                if c.lstrip().startswith(("*", "///")):
                    continue
                st = start[i]
                head_line = code[st][0]
                for m in lit.finditer(c):
                    if m.group(1) not in names:
                        continue
                    before, after = c[:m.start()], c[m.end():]
                    if registering_call.search(before) or registration_statement.match(head_line):
                        continue
                    if key_context.search(before):
                        continue  # a parameter key (`name`, the calls' and fusions' param)
                    em = enum_name.search(before)
                    if em and em.group(1).lower() == m.group(1):
                        continue  # case Kind::all_gather: return "all_gather"; (an enumerator's name)
                    if reduction_value.search(before):
                        continue  # "max" as a value of all_reduce's `reduction` param
                    if other_vocabulary.search(before):
                        continue  # LLVM's intrinsics and block names, the outlined math functions
                    if re.search(r'\[\s*$', before) and re.match(r'\s*\]\s*=', after):
                        continue  # rules["exp"] = ...
                    if re.search(r'\{\s*$', before) and re.match(r'\s*,\s*(?!")', after):
                        continue  # {"exp", rule} in a table of rules
                    if re.match(r'\s*for\s*\(', head_line):
                        body = "\n".join(x[0] for x in code[i:i + 8])
                        if re.search(REG + r'|\w+(\(\))?\s*\[\s*\w+\s*\](\.\w+)?\s*=', body):
                            continue  # for (n : {"add", "sub"}) register(n) ...
                    found.append((path, i + 1, m.group(1), lines[i].strip(), bool(comment.strip())))
for path, n, name, text, _ in found:
    print(f'{path}:{n}: "{name}": {text}')
uncommented = [x for x in found if not x[4]]
print(f"primitive_name_literals.sh: {len(found)} literal(s) naming a primitive "
      f"({len(uncommented)} without a comment on the line); at most {limit}, each commented")
sys.exit(1 if len(found) > limit or uncommented else 0)
PY
