"""The generated bindings in use: one lock entry's package (the default, or COOPGEN_CCCL's)."""
import functools
import importlib
import os

from coopgen._generated import DEFAULT_CCCL  # the lock's first entry


@functools.lru_cache(maxsize=None)
def package(cccl: str | None = None):
    cccl = cccl or os.environ.get("COOPGEN_CCCL", DEFAULT_CCCL)
    tag = "cccl_" + cccl.replace(".", "_")
    try:
        return importlib.import_module(f"coopgen._generated.{tag}")
    except ImportError:
        raise ImportError(f"coopgen has no generated bindings for CCCL {cccl}; run "
                          f"`coopgen generate --cccl {cccl}`") from None


@functools.lru_cache(maxsize=None)
def enums() -> dict:
    """C++ enum type name -> EnumSpec."""
    return {e.name: e for e in package().ENUMS}


@functools.lru_cache(maxsize=None)
def docstrings() -> dict:
    """The API reference's sections, keyed by the names users write (``block.BlockScan``,
    ``block.BlockScan.ExclusiveSum``, ``block.sum``): what ``help()`` shows."""
    return importlib.import_module(f"{package().__name__}.docstrings").DOCSTRINGS


def classes() -> dict:
    return {c.name: c for c in package().CLASSES}


def functions() -> dict:
    """Namespace-scope functions, each a ClassSpec with ``function=True``."""
    return {f.name: f for f in getattr(package(), "FUNCTIONS", ())}


@functools.lru_cache(maxsize=None)
def include_dir():
    """The CCCL include root matching the generated package's lock entry: the installed wheel
    of the pinned version (pip checked its hash; hashing 1,700 headers again would cost every
    process ~0.1-0.5 s before its first compile), else the user cache or a CUDA toolkit whose
    headers match the lock's digest, else the wheel downloaded once."""
    from coopgen.generator import headers

    pkg = package()
    entry = headers.LockEntry(pkg.CCCL, pkg.WHEEL, pkg.WHEEL_FILE, pkg.WHEEL_SHA256,
                              pkg.HEADERS_DIGEST, header_files=0)
    return headers.installed_wheel_root(entry) or headers.locate(entry).include_root
