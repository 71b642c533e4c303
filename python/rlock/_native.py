# SPDX-License-Identifier: BSD-3-Clause
"""The compiled module and the checks made when it is loaded."""
from __future__ import annotations

from ._rlock_cffi import ffi, lib

__all__ = ["ffi", "lib", "HEADER_VERSION", "LIBRARY_VERSION"]

#: The version of the headers the module was compiled against.
HEADER_VERSION = "%d.%d.%d" % (lib.RLOCK_VERSION_MAJOR,
                               lib.RLOCK_VERSION_MINOR,
                               lib.RLOCK_VERSION_PATCH)
#: The version of the librlock loaded now.
LIBRARY_VERSION: str = ffi.string(lib.rlock_version_string()).decode()

if (lib.rlock_version() >> 16 != lib.RLOCK_VERSION_MAJOR
        or lib.rlock_version() < ((lib.RLOCK_VERSION_MAJOR << 16)
                                  | (lib.RLOCK_VERSION_MINOR << 8))):
    raise ImportError(
        f"rlock: compiled against librlock {HEADER_VERSION}, but the "
        f"librlock loaded is {LIBRARY_VERSION}: rebuild the package "
        f"(pip install --no-build-isolation ./python)")
