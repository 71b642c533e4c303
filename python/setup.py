# SPDX-License-Identifier: BSD-3-Clause
"""Builds the rlock package: the cffi extension rlock._rlock_cffi over
librlock (rlock/_build.py says where librlock is found), with the
library's own version. Metadata is in pyproject.toml.

    /usr/bin/python3 -m venv --system-site-packages ~/venv
    RLOCK_BUILD_DIR=/path/to/rlock/build ~/venv/bin/pip install \\
        --no-build-isolation ./python

The build takes cffi, setuptools and wheel from the Python running it
(Debian: python3-cffi, python3-setuptools, python3-wheel); when one is
missing it stops here with a message naming the fix, not a traceback.
"""
import importlib.util
import os
import runpy
import sys
from typing import Dict

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
DEBIAN_SITE = "/usr/lib/python3/dist-packages"
# What the build needs from Debian (README, python/README.md).
APT = ("python3-cffi python3-setuptools python3-wheel python3-dev "
       "python3-venv pkg-config")


def _missing_tools() -> Dict[str, str]:
    """The build's Python modules this interpreter cannot import: cffi
    always, wheel where a wheel is made (pip's metadata and wheel steps;
    setuptools older than 70.1 has no bdist_wheel of its own)."""
    need = {"cffi": "python3-cffi"}
    if {"bdist_wheel", "dist_info"} & set(sys.argv[1:]):
        need["wheel"] = "python3-wheel"
    return {m: p for m, p in need.items()
            if importlib.util.find_spec(m) is None}


def _tools_message(missing: Dict[str, str]) -> str:
    """What to do about the missing modules, by which Python runs: a
    Python that is not Debian's (pyenv, conda, a build of its own) never
    sees Debian's packages; Debian's sees them only outside a venv or in
    one made with --system-site-packages."""
    names = ", ".join(sorted(missing))
    pkgs = " ".join(sorted(missing.values()))
    head = f"rlock: cannot build: {sys.executable} cannot import {names}."
    fix_venv = ("Make the venv with Debian's Python and its packages:\n"
                f"  apt-get install {APT}    (as root, or with sudo)\n"
                "  /usr/bin/python3 -m venv --system-site-packages VENV\n"
                "  VENV/bin/pip install --no-build-isolation ./python")
    if os.path.realpath(sys.base_prefix) != "/usr":
        return (f"{head}\nThis Python ({sys.base_prefix}) is not Debian's "
                f"/usr/bin/python3, so Debian's packages ({pkgs}) "
                f"are not visible to it (on PATH first: pyenv, conda, ...).\n{fix_venv}")
    if DEBIAN_SITE not in sys.path:
        return (f"{head}\nThis venv ({sys.prefix}) was made without "
                f"--system-site-packages, so it does not see Debian's "
                f"{DEBIAN_SITE}.\n{fix_venv}")
    return f"{head}\n  apt-get install {pkgs}    (as root, or with sudo)"


missing = _missing_tools()
if missing:
    sys.exit(_tools_message(missing))

build = runpy.run_path(os.path.join(HERE, "rlock", "_build.py"))
args = build["BUILD_ARGS"]
print(f"rlock: building against librlock from {args['source']}")

setup(
    version=build["library_version"](args["include_dirs"]),
    cffi_modules=["rlock/_build.py:ffibuilder"],
)
