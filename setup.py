"""Package discovery: every folder with an ``__init__.py`` under bindings/ and generator/, so a
lock entry's generated package (bindings/_generated/cccl_*) ships without being listed by hand.
The rest of the configuration is pyproject.toml's."""
from pathlib import Path

from setuptools import setup

ROOT = Path(__file__).parent
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


setup(packages=packages())
