# SPDX-License-Identifier: BSD-3-Clause
"""What the type hints promise (python/README.md): mypy --strict accepts
the documented calls and reports the misuses it can see."""
from __future__ import annotations

import os
import tempfile
from typing import List

import pytest

mypy_api = pytest.importorskip("mypy.api")

SNIPPET = '''
import rlock
import rlock.aio


def sync(client: rlock.Client) -> bool:
    lock = client.lock("x", wait=5, lease=60)
    with lock:
        pass
    return lock.acquire(timeout=None) and lock.acquire(wait=1, lease=None)


async def aio(client: rlock.aio.Client) -> bool:
    lock = client.lock("x", wait=5)
    async with lock:
        pass
    ok = await lock.acquire(timeout=None, lease=None)
    lock.release()  # line 18: not awaited
    if lock.alocked():  # line 19: a coroutine in a boolean context
        pass
    return ok and await lock.alocked() and await lock.aheld()
'''


def mypy(*flags: str) -> List[str]:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "snippet.py")
        with open(path, "w") as f:
            f.write(SNIPPET)
        out, err, _ = mypy_api.run(["--strict", "--no-incremental",
                                    "--cache-dir", os.devnull, *flags, path])
    return [line.split("snippet.py:", 1)[1] for line in out.splitlines()
            if "snippet.py:" in line and ": error:" in line]


def test_mypy_accepts_the_documented_calls_and_flags_misuse() -> None:
    errors = mypy()
    assert [e.split(":")[0] for e in errors] == ["18"], errors
    assert "unused-coroutine" in errors[0]
    # A coroutine taken for a bool: only with truthy-bool (README says so)
    errors = mypy("--enable-error-code", "truthy-bool")
    assert [e.split(":")[0] for e in errors] == ["18", "19"], errors
