#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check that no function in src/ is longer than LIMIT lines (80).

Functions are found the way the tree is formatted (.clang-format): a
definition starts on a line at column 0 ending in ") {", possibly after
continuation lines of its signature, and ends at the next "}" in column 0.

  scripts/funclen.py [LIMIT]

Exits 1 and names every function over the limit.
"""
import glob
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")


def long_functions(limit):
    found = []
    for path in sorted(glob.glob(os.path.join(ROOT, "src", "**", "*.c"),
                                 recursive=True)):
        lines = open(path).read().split("\n")
        start = None
        for i, line in enumerate(lines):
            if start is None and re.match(r"^[A-Za-z_].*\)\s*\{$", line):
                start = i
                while start > 0 and lines[start - 1] and \
                        not lines[start - 1].startswith(("}", "/", "#", " *")) \
                        and not lines[start - 1].endswith((";", "*/")):
                    start -= 1
            elif start is not None and line == "}":
                if i - start + 1 > limit:
                    found.append((i - start + 1,
                                  os.path.relpath(path, ROOT), start + 1,
                                  lines[start].strip()))
                start = None
    return found


def main():
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else 80
    found = long_functions(limit)
    for n, path, line, sig in found:
        print("funclen: %s:%d: %d lines: %s" % (path, line, n, sig))
    if found:
        print("funclen: %d functions over %d lines" % (len(found), limit))
        return 1
    print("funclen: every function in src/ is at most %d lines" % limit)
    return 0


if __name__ == "__main__":
    sys.exit(main())
