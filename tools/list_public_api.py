#!/usr/bin/env python3
# minijax public API lister: the free functions the public headers (those include/minijax/minijax.h includes)
# declare outside `detail`, and the public members of the classes a user calls (Array, Jit, Lowered, ...).
# Owns tests/api/public_functions.txt (written, or with --check compared), from clang-19's JSON AST dump.
"""Lists every free function (and function template, operator included) that the public headers
declare (the project headers the umbrella header include/minijax/minijax.h includes directly; the
headers they include in turn are internal, installed under minijax/detail/), in namespace minijax
or a named namespace inside it other than `detail` (and not in an anonymous namespace), one
qualified name per line, overloads merged, sorted; and the public member functions
(constructors and member templates included; implicit, defaulted and deleted ones, destructors and
assignment operators left out) of the classes in MEMBER_CLASSES, as `minijax::Class::member`.

  tools/list_public_api.py            rewrite tests/api/public_functions.txt
  tools/list_public_api.py --check    exit 1 (and print the difference) if the file is stale

Needs clang-19 (Debian's clang-19). tests/api/test_bad_input.cc fails for a listed function with
neither a bad-input case nor an entry in tests/no_bad_input.txt.
"""
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(ROOT, "tests", "api", "public_functions.txt")
UMBRELLA = os.path.join(ROOT, "include", "minijax", "minijax.h")


def public_headers():
    """The headers the umbrella includes directly (paths from the source tree's root)."""
    found = set()
    for line in open(UMBRELLA):
        m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
        if m:
            found.add(m.group(1))
    return found


PUBLIC_HEADERS = public_headers()
FUNCTION_KINDS = {"FunctionDecl", "FunctionTemplateDecl"}
# The classes whose public members a user program calls directly.
MEMBER_CLASSES = {"Array", "Jit", "LoweredProgram", "Lowered", "Compiled", "Mesh", "NamedSharding"}
MEMBER_KINDS = {"CXXMethodDecl", "CXXConstructorDecl", "CXXConversionDecl", "FunctionTemplateDecl"}


def ast_objects():
    cmd = ["clang++-19", "-x", "c++", "-std=c++20", "-fsyntax-only", "-I.", "-Iinclude",
           "-Xclang", "-ast-dump=json", "-Xclang", "-ast-dump-filter=minijax",
           "include/minijax/minijax.h"]
    text = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    dec = json.JSONDecoder()
    i = 0
    while True:
        while i < len(text) and text[i] != "{":
            i += 1  # the filter prints each matching top-level declaration as its own object
        if i >= len(text):
            return
        obj, i = dec.raw_decode(text, i)
        yield obj


class Walker:
    """Walks declarations in document order. clang's JSON gives a location's file only where it
    differs from the previous location printed, so the current file is carried along."""

    def __init__(self):
        self.file = ""
        self.names = set()

    def see_loc(self, loc):
        if not isinstance(loc, dict):
            return
        for key in ("spellingLoc", "expansionLoc"):
            if key in loc:
                self.see_loc(loc[key])
        if "file" in loc:
            self.file = loc["file"]

    def in_project(self):
        f = self.file[2:] if self.file.startswith("./") else self.file
        if f.startswith(ROOT + "/"):
            f = f[len(ROOT) + 1:]
        return f in PUBLIC_HEADERS

    def walk(self, node, scope):
        self.see_loc(node.get("loc"))
        rng = node.get("range", {})
        self.see_loc(rng.get("begin"))
        file_here = self.file
        kind = node.get("kind")
        if kind == "NamespaceDecl":
            name = node.get("name")
            if not name or name == "detail":
                self._skip(node)
                return
            for child in node.get("inner", []):
                self.walk(child, scope + [name])
        elif kind in ("CXXRecordDecl", "ClassTemplateDecl") and scope == ["minijax"] \
                and node.get("name") in MEMBER_CLASSES:
            self.file = file_here
            record = node
            if kind == "ClassTemplateDecl":
                record = next((c for c in node.get("inner", []) if c.get("kind") == "CXXRecordDecl"), {})
            if record.get("completeDefinition") and self.in_project():
                self._members(record, scope + [node["name"]])
            else:
                self._skip(node)
        elif kind in FUNCTION_KINDS:
            self.file = file_here
            public = scope and scope[0] == "minijax" and not node.get("isImplicit")
            if kind == "FunctionTemplateDecl":  # an out-of-line member template is no free function
                templated = [c.get("kind") for c in node.get("inner", []) if "Decl" in c.get("kind", "")]
                public = public and "FunctionDecl" in templated
            if public and self.in_project():
                self.names.add("::".join(scope + [node["name"]]))
            self._skip(node)
        else:
            self._skip(node)
        self.see_loc(rng.get("end"))

    def _members(self, record, scope):
        """Lists the public member functions of a class definition."""
        access = "private" if record.get("tagUsed") == "class" else "public"
        for child in record.get("inner", []):
            kind = child.get("kind")
            if kind == "AccessSpecDecl":
                access = child.get("access", access)
            decl = child
            if kind == "FunctionTemplateDecl":
                decl = next((c for c in child.get("inner", []) if c.get("kind") in MEMBER_KINDS), {})
            name = child.get("name", "")
            if (access == "public" and kind in MEMBER_KINDS and not child.get("isImplicit")
                    and not decl.get("explicitlyDefaulted") and not decl.get("explicitlyDeleted")
                    and name and name != "operator=" and not name.startswith("~")):
                self.names.add("::".join(scope + [name.split("<")[0]]))
            self._skip({"inner": [child]})

    def _skip(self, node):
        """Tracks the file through a subtree without listing anything in it."""
        for child in node.get("inner", []) if isinstance(node, dict) else []:
            if isinstance(child, dict):
                self.see_loc(child.get("loc"))
                rng = child.get("range", {})
                self.see_loc(rng.get("begin"))
                self._skip(child)
                self.see_loc(rng.get("end"))


def main():
    w = Walker()
    for obj in ast_objects():
        if obj.get("kind") == "NamespaceDecl" and obj.get("name") == "minijax":
            w.walk(obj, [])
    text = ("# minijax's public free functions and the public members of Array, Jit, Lowered, Compiled,\n"
            "# Mesh, NamedSharding, as the headers include/minijax/minijax.h includes declare them\n"
            "# (tools/list_public_api.py from clang-19's AST; namespaces `detail` and anonymous excluded;\n"
            "# overloads merged).\n"
            + "".join(n + "\n" for n in sorted(w.names)))
    if "--check" in sys.argv[1:]:
        old = open(OUT).read() if os.path.exists(OUT) else ""
        if old != text:
            a, b = set(old.splitlines()), set(text.splitlines())
            for n in sorted(b - a):
                print("not listed: " + n)
            for n in sorted(a - b):
                print("listed but gone: " + n)
            print("tests/api/public_functions.txt is stale: run tools/list_public_api.py")
            return 1
        print("tests/api/public_functions.txt is up to date (%d declarations)" % len(w.names))
        return 0
    with open(OUT, "w") as f:
        f.write(text)
    print("wrote %d declarations to %s" % (len(w.names), os.path.relpath(OUT, ROOT)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
