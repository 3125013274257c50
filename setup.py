"""Build steps pyproject.toml cannot say:

- **Packages**: every folder with an ``__init__.py`` under bindings/ and generator/, so a lock
  entry's generated package (bindings/_generated/cccl_*) ships without being listed by hand.
- **The default lock entry's CCCL headers ship inside the package.** coopgen compiles its shims
  against the headers of the lock entry its bindings were generated from (CCCL 3.5.0 by
  default). Pinning ``nvidia-cuda-cccl`` at that version as a dependency would fight the CUDA
  toolkit's own pin (``cuda-toolkit[cccl]==13.0.*`` takes CCCL 13.0.x), and fetching the headers
  on first use would fail on a machine without network. So the build copies them into
  ``bindings/_cccl/<cccl>/`` (ignored by git), installed as ``coopgen/_cccl/<cccl>/`` beside a
  ``DIGEST`` file holding the lock digest they matched. ``[build-system] requires`` installs
  the entry's wheel into pip's isolated build environment (without build isolation, install it
  into the environment that builds); the copy is checked against the lock's digest and redone
  only when the lock entry changes. Editable installs run this step too.
"""
import importlib.metadata
import importlib.util
import shutil
import sys
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent
PACKAGE_DIRS = {"coopgen": "bindings", "coopgen.generator": "generator"}


def packages() -> list[str]:
    found = []
    for name, folder in PACKAGE_DIRS.items():
        base = ROOT / folder
        for init in sorted(base.rglob("__init__.py")):
            rel = init.parent.relative_to(base).parts
            if all(part.isidentifier() for part in rel) and "__pycache__" not in rel:
                found.append(".".join((name, *rel)))
    return found


def _headers_module():
    """generator/headers.py loaded alone: the package (and numba) is not importable here."""
    spec = importlib.util.spec_from_file_location("_coopgen_build_headers",
                                                  ROOT / "generator" / "headers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def ship_default_headers() -> Path:
    headers = _headers_module()
    entry = headers.load_lock(ROOT / headers.LOCK_FILENAME)[0]
    package_dir = ROOT / "bindings"
    shipped = headers.shipped_root(entry, package_dir)
    if shipped is not None:
        return shipped
    source = headers.wheel_root(entry)
    if source is None:
        raise SystemExit(
            f"coopgen's build ships CCCL {entry.cccl}'s headers and takes them from "
            f"{entry.wheel}, which is not installed in the build environment. Build with pip's "
            f"build isolation (the default: pyproject.toml's [build-system] requires it), or "
            f"`pip install {entry.wheel}` into the building environment first.")
    digest, count = headers.digest_headers(source)
    if digest != entry.headers_digest:
        raise SystemExit(f"{source}: digest {digest} ({count} files) differs from the lock's "
                         f"{entry.headers_digest} for CCCL {entry.cccl}; refusing to ship it")
    target = package_dir / headers.SHIPPED_DIR / entry.cccl
    stage = target.with_name(f".{entry.cccl}.tmp")
    shutil.rmtree(stage, ignore_errors=True)
    for tree in headers.DIGESTED_TREES:
        if (source / tree).is_dir():
            shutil.copytree(source / tree, stage / tree)
    dist = importlib.metadata.distribution("nvidia-cuda-cccl")
    for f in dist.files or ():  # CCCL's licence travels with its headers
        if "license" in f.name.lower():
            shutil.copyfile(dist.locate_file(f), stage / f.name)
    (stage / headers.SHIPPED_DIGEST_FILE).write_text(entry.headers_digest + "\n", encoding="utf-8")
    shutil.rmtree(target, ignore_errors=True)
    stage.rename(target)
    for old in (package_dir / headers.SHIPPED_DIR).iterdir():  # other entries' leftovers
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    return target


class BuildPyWithHeaders(build_py):
    def run(self):
        ship_default_headers()
        super().run()


setup(packages=packages(), cmdclass={"build_py": BuildPyWithHeaders})
