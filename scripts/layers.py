#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Check that src/lib's layers point one way.

The folders of src/lib are layers, in this order:
  base <- net <- cmd <- kinds <- client <- loop <- blocking <- api
A file may include the headers of its own layer and of the layers before
it, and call functions defined there, never after it. The loop engine
sits below the blocking driver, whose background thread runs it; the
engine never reaches up into the blocking driver. Includes are
read from the sources; calls from the compiled objects (nm), when a build
directory is given.

  scripts/layers.py [BUILD_DIR]

Exits 1 and names every edge that points the wrong way.
"""
import glob
import os
import re
import subprocess
import sys

ORDER = ["base", "net", "cmd", "kinds", "client", "loop", "blocking",
         "api"]
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
LIB = os.path.join(ROOT, "src", "lib")


def allowed(src, dst):
    return ORDER.index(dst) <= ORDER.index(src)


def layer_of(path):
    rel = os.path.relpath(path, LIB).split(os.sep)
    return rel[0] if rel[0] in ORDER else None


def include_edges():
    headers = {}
    for layer in ORDER:
        for h in glob.glob(os.path.join(LIB, layer, "*.h")):
            headers[os.path.basename(h)] = layer
    bad = []
    for layer in ORDER:
        for f in glob.glob(os.path.join(LIB, layer, "*.[ch]")):
            for m in re.finditer(r'#include "([^"]+)"', open(f).read()):
                dst = headers.get(os.path.basename(m.group(1)))
                if dst and not allowed(layer, dst):
                    bad.append("%s/%s includes %s (%s)" % (
                        layer, os.path.basename(f), m.group(1), dst))
    return bad


def nm(obj, defined):
    args = ["nm", "--defined-only" if defined else "--undefined-only", obj]
    out = subprocess.run(args, capture_output=True, text=True).stdout
    syms = set()
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[-1].startswith("rlock"):
            syms.add(parts[-1])
    return syms


def call_edges(build):
    objdir = os.path.join(build, "CMakeFiles", "rlock_obj.dir", "src", "lib")
    objs = {layer: glob.glob(os.path.join(objdir, layer, "*.o"))
            for layer in ORDER}
    if not any(objs.values()):
        sys.exit("layers.py: no objects under %s (build first)" % objdir)
    where = {}
    for layer, files in objs.items():
        for o in files:
            for s in nm(o, True):
                where[s] = layer
    bad = []
    for layer, files in objs.items():
        for o in files:
            for s in sorted(nm(o, False)):
                dst = where.get(s)
                if dst and not allowed(layer, dst):
                    bad.append("%s/%s calls %s (%s)" % (
                        layer, os.path.basename(o)[:-2], s, dst))
    return bad


def main():
    bad = include_edges()
    if len(sys.argv) > 1:
        bad += call_edges(sys.argv[1])
    for b in bad:
        print("layers: " + b)
    if bad:
        print("layers: %d edges point up (order: %s)" % (
            len(bad), " <- ".join(ORDER)))
        return 1
    print("layers: every include%s points down (%s)" % (
        " and call" if len(sys.argv) > 1 else "", " <- ".join(ORDER)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
