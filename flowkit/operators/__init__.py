"""The built-in operator catalog, one package per Modular RAG module, one file per family.

Importing this package registers every operator: `discover` imports every module file of each
module package (indexing, pre_retrieval, ...), so a new operator file needs no import line
anywhere. Operator files import only the contract (flowkit.contract), never flowkit.registry.
"""
from __future__ import annotations

import importlib
import pkgutil

from ..contract import MODULES


def discover(package: str = __name__) -> list[str]:
    """Import every module of each module package under `package` (one per name in MODULES that
    exists there); returns the module names imported, in order."""
    imported: list[str] = []
    for module in MODULES:
        try:
            pkg = importlib.import_module(f"{package}.{module}")
        except ModuleNotFoundError as err:
            if err.name != f"{package}.{module}":
                raise
            continue
        for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
            name = f"{pkg.__name__}.{info.name}"
            importlib.import_module(name)
            imported.append(name)
    return imported


discover()
