"""The numba-cuda, numba and numpy releases coopgen supports (the ranges its package metadata
declares, so written once), checked at ``import coopgen`` before numba or numpy is touched: one
message naming each package, its range and the version found, not an error deep in lowering."""
import importlib.metadata

from .codegen.cache import own_version

#: Packages whose internals coopgen depends on; the CUDA compiler libraries, which may come from
#: a toolkit rather than wheels, are ``coopgen doctor``'s.
CHECKED = ("numba-cuda", "numba", "numpy", "numba-cuda-mlir")
#: backend package (coopgen.<package>) -> the compiler's distributions it needs; a backend is
#: used when its compiler is installed, and at least one must be.
BACKENDS = {"lower": ("numba-cuda", "numba"), "mlir": ("numba-cuda-mlir",),
            "cute": ("nvidia-cutlass-dsl",)}
#: ``coopgen.__version__``, ``coopgen --version``, part of every shim cache key.
VERSION = own_version()


def unsupported(declared: list[str] | None = None, installed=importlib.metadata.version) \
        -> list[tuple[str, str | None]]:
    """(requirement, version found or None) of each checked package outside its range, e.g.
    ``("numba-cuda<0.31,>=0.30.0", "0.29.0")``."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    if declared is None:
        try:
            declared = importlib.metadata.requires("coopgen") or []
        except importlib.metadata.PackageNotFoundError:  # imported from a source tree
            declared = []
    problems = []
    for line in declared:
        req = Requirement(line)
        if canonicalize_name(req.name) not in CHECKED or (
                req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue  # not checked, or an extra's requirement ([generate], [dev])
        try:
            found = installed(req.name)
        except importlib.metadata.PackageNotFoundError:
            found = None
        if found is None and req.name in _optional(installed):
            continue  # another backend's compiler is installed
        if found is None or not req.specifier.contains(found, prereleases=True):
            problems.append((f"{req.name}{req.specifier}", found))
    return problems


def _present(dist: str, installed) -> bool:
    try:
        return installed(dist) is not None
    except importlib.metadata.PackageNotFoundError:
        return False


def installed_backends(installed=importlib.metadata.version) -> list[str]:
    """The backend packages whose compilers are installed (numba-cuda's first)."""
    return [pkg for pkg, dists in BACKENDS.items()
            if all(_present(d, installed) for d in dists)]


def _optional(installed) -> set[str]:
    """Compilers' distributions that may be missing: all but one backend's, if one is there."""
    present = installed_backends(installed)
    return {d for pkg, dists in BACKENDS.items() for d in dists} if present else set()


def check() -> None:
    problems = unsupported()
    if problems:
        found = "; ".join(f"{req} (found {v or 'none'})" for req, v in problems)
        fix = " ".join(f"'{req}'" for req, _ in problems)
        raise ImportError(f"coopgen does not support this environment: it needs {found}. "
                          f"Fix: pip install {fix}")
