#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""The arch_docs test: what docs/ARCHITECTURE.md names must exist.

Every file path in backquotes must name a file (or, with a glob or a
`[ch]` pair, at least one file) of the source tree, found from the tree's
root or from one of the folders the page names files relative to. Every
`rlock_...` identifier in backquotes must occur in the sources. In the
"Where to look" table every test named must be a test of the tree: a C
or C++ test file (tests/**/test_NAME.c[pp]), a Python test
(python/tests/test_NAME.py) or a test function of one.

  tests/check_arch_docs.py [ROOT]

Exits 1 and lists what it did not find.
"""
import glob
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))
DOC = os.path.join(ROOT, "docs", "ARCHITECTURE.md")
# Folders the page names files relative to, besides the root.
BASES = ["", "src", "src/lib", "src/lib/scripts", "src/cli", "include",
         "include/rlock", "tests", "tests/integration", "tests/support",
         "python", "python/rlock", "python/tests", "docs", "scripts",
         "bench", "bench/py", "bench/peers", "bench/peers/node", "cmake", "fuzz", "examples",
         "src/bench", "src/adapters", "src/lib/scripts/include",
         "tests/consumer", "tests/abi"] + [
    "src/lib/" + d for d in ("base", "net", "cmd", "kinds", "client",
                             "loop", "blocking", "api")]
EXT = (".c", ".h", ".py", ".lua", ".md", ".sh", ".cmake", ".cpp", ".in",
       ".hpp", ".1", ".symbols", ".txt", ".json")
SOURCES = ("src", "include", "tests", "python", "fuzz", "cmake", "examples")


def looks_like_path(tok):
    if " " in tok or tok.startswith(("-", "$", "<")) or "://" in tok:
        return False
    if "NAME" in tok or tok.startswith("generated/"):
        return False  # a placeholder, or a file the build writes
    if re.search(r"\.\[ch\]$", tok):
        return True
    return tok.endswith(EXT) or (tok.endswith("/") and len(tok) > 1)


def exists(tok):
    pats = [tok]
    if tok.endswith(".[ch]"):
        pats = [tok[:-5] + ".c", tok[:-5] + ".h"]
    for base in BASES:
        for p in pats:
            full = os.path.join(ROOT, base, p)
            if glob.glob(full) or os.path.exists(full):
                return True
    return False


def source_text():
    parts = []
    for top in SOURCES:
        for dirpath, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                if f.endswith((".c", ".h", ".py", ".cpp", ".hpp", ".txt",
                               ".cmake", ".in")):
                    with open(os.path.join(dirpath, f), errors="replace") as fh:
                        parts.append(fh.read())
    with open(os.path.join(ROOT, "CMakeLists.txt")) as fh:
        parts.append(fh.read())
    return "\n".join(parts)


def tests_known():
    names = set()
    for p in glob.glob(os.path.join(ROOT, "tests", "**", "test_*.c*"),
                       recursive=True):
        names.add(os.path.splitext(os.path.basename(p))[0])
    for p in glob.glob(os.path.join(ROOT, "python", "tests", "test_*.py")):
        names.add(os.path.splitext(os.path.basename(p))[0])
    return names


def where_to_look_tests(doc):
    m = re.search(r"^## Where to look\n(.*?)(?=^## )", doc, re.S | re.M)
    if not m:
        return None
    out = []
    for line in m.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and not set(cells[0]) <= set("-"):
            out += re.findall(r"`([^`]+)`", cells[-1])
    return out


def main():
    with open(DOC) as fh:
        doc = re.sub(r"^```.*?^```", "", fh.read(), flags=re.S | re.M)
    text = source_text()
    idents = set(re.findall(r"\brlock_\w+", text))
    funcs = set(re.findall(r"\b(\w+)\s*\(", text))
    bad = []
    toks = sorted(set(re.findall(r"`([^`\n]+)`", doc)))
    for tok in toks:
        if looks_like_path(tok) and not exists(tok):
            bad.append("no such file: %s" % tok)
        for ident in re.findall(r"\brlock_\w*[a-z0-9]\b", tok):
            if ident not in idents:
                bad.append("not in the sources: %s" % ident)
    tests = where_to_look_tests(doc)
    if tests is None:
        bad.append("no 'Where to look' section")
    else:
        known = tests_known()
        for t in tests:
            name = t.split("/")[-1]
            name = os.path.splitext(name)[0]
            if name in known or looks_like_path(t) and exists(t):
                continue
            if name in funcs:
                continue  # a test function
            bad.append("no such test: %s" % t)
    for b in sorted(set(bad)):
        print("arch_docs: " + b)
    if bad:
        print("arch_docs: %d names in docs/ARCHITECTURE.md not found" %
              len(set(bad)))
        return 1
    print("arch_docs: %d names checked in docs/ARCHITECTURE.md" % len(toks))
    return 0


if __name__ == "__main__":
    sys.exit(main())
