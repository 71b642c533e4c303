# SPDX-License-Identifier: BSD-3-Clause
# The compiled cffi module (rlock/_build.py): its objects are cffi's.
from typing import Any, Callable, TypeVar

_F = TypeVar("_F", bound=Callable[..., Any])

class _FFI:
    def def_extern(self, name: str = ..., error: Any = ...,
                   onerror: Any = ...) -> Callable[[_F], _F]: ...
    def __getattr__(self, name: str) -> Any: ...

ffi: _FFI
lib: Any
