# SPDX-License-Identifier: BSD-3-Clause
"""Builds the rlock package: the cffi extension rlock._rlock_cffi over
librlock (rlock/_build.py says where librlock is found), with the
library's own version. Metadata is in pyproject.toml.

    RLOCK_BUILD_DIR=/path/to/rlock/build pip install --no-build-isolation ./python
"""
import os
import runpy

from setuptools import setup

HERE = os.path.dirname(os.path.abspath(__file__))
build = runpy.run_path(os.path.join(HERE, "rlock", "_build.py"))
args = build["BUILD_ARGS"]
print(f"rlock: building against librlock from {args['source']}")

setup(
    version=build["library_version"](args["include_dirs"]),
    cffi_modules=["rlock/_build.py:ffibuilder"],
)
