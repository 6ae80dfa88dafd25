"""Lazy re-exports for a package's ``__init__`` (PEP 562 module ``__getattr__``).

A public name's defining module is imported on first use, so importing the
package (or one of its leaves, which imports the package first) stays cheap:
``import kstream.log`` must not load the groups code, deltalake or pyspark.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def lazy_exports(package: str, names: Mapping[str, str], public: Iterable[str]
                 ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package``: ``names`` maps a public name to the
    module that defines it; ``public`` is the package's ``__all__``."""
    listed = set(public)

    def __getattr__(name: str) -> Any:  # noqa: N807 - the module hook's name
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)  # later lookups skip this function
        return value

    def __dir__() -> list[str]:  # noqa: N807
        return sorted(set(vars(sys.modules[package])) | listed)

    return __getattr__, __dir__
