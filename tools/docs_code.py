"""The code blocks of README.md and of the hand-written pages of docs/, as the tests read them.

Every fenced block names its language. A ``python`` block runs:

- tests/cpu/test_docs_site.py (no GPU) runs its host code and compiles and links, for sm_90,
  every kernel it launches, with the launch's block shape and argument types; what follows the
  last launch (checks of what a GPU computed) is left out;
- tests/gpu/test_docs_examples.py runs it as written, its checks against numpy included.

A block is written for the compiler it imports: numba-cuda (``from numba import cuda``),
numba-cuda-mlir (``from numba_cuda_mlir import cuda``) or CuTe DSL (``import cutlass``); a block
that imports ``torch`` needs PyTorch and a GPU. A ``python`` block that cannot run as it stands
(a fragment of a larger program) says so, with the reason, in a comment on the line above its
fence:

    <!-- not run: the reason -->

Blocks in another language (``bash``, ``toml``, ``text``) are not run; of ``bash`` blocks the
CPU suite checks what they name (coopgen's subcommands, the repository's scripts and modules
and their options, paths, extras). A fence without a language, or with one not in LANGUAGES, is
an error the CPU suite reports.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: The languages a fence may name; only ``python`` blocks run.
LANGUAGES = ("python", "bash", "toml", "text")
_FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.S | re.M)
_NOT_RUN = re.compile(r"^<!--\s*not run:\s*(.+?)\s*-->$")
#: The compiler a block is written for, by the import that names it (first match wins).
_COMPILERS = (("numba_cuda_mlir", re.compile(r"^from numba_cuda_mlir import cuda\b", re.M)),
              ("cute", re.compile(r"^\s*(import cutlass|from cutlass\b)", re.M)),
              ("numba", re.compile(r"^from numba import\b.*\bcuda\b", re.M)))


@dataclass(frozen=True)
class Block:
    """One fenced block: where it is, its language, its code, and why it is not run (if so)."""

    page: str        # "README" or the page's file stem ("quickstart")
    line: int        # the fence's line, 1-based
    language: str
    code: str
    not_run: str | None

    @property
    def runs(self) -> bool:
        return self.language == "python" and self.not_run is None

    @property
    def compiler(self) -> str:
        """``numba``, ``numba_cuda_mlir``, ``cute``, or ``host`` (no kernel compiler imported)."""
        return next((name for name, pattern in _COMPILERS if pattern.search(self.code)), "host")

    @property
    def needs_torch(self) -> bool:
        return re.search(r"^\s*import torch\b|^\s*from torch\b", self.code, re.M) is not None


def pages() -> list[Path]:
    """README.md and the hand-written pages (docs/api/ is generated)."""
    return [ROOT / "README.md"] + sorted((ROOT / "docs").glob("*.md"))


def blocks(path: Path) -> list[Block]:
    text = path.read_text(encoding="utf-8")
    page = "README" if path.name == "README.md" else path.stem
    found = []
    for m in _FENCE.finditer(text):
        before = text[:m.start()]
        above = before.rstrip().rsplit("\n", 1)[-1]  # the last line before the fence
        reason = _NOT_RUN.match(above.strip())
        found.append(Block(page, before.count("\n") + 1, m.group(1), m.group(2),
                           reason.group(1) if reason else None))
    return found


def all_blocks() -> list[Block]:
    return [b for path in pages() for b in blocks(path)]


def runnable() -> list[tuple[str, Block]]:
    """``(id, block)`` of every block that runs; the id is the page and the block's number among
    the page's runnable blocks (``quickstart-0``)."""
    out = []
    for path in pages():
        runs = [b for b in blocks(path) if b.runs]
        out += [(f"{b.page}-{i}", b) for i, b in enumerate(runs)]
    return out


def problems() -> list[str]:
    """Fences the tests cannot classify: no language, or one outside LANGUAGES; a ``not run``
    note above a block that is not Python."""
    bad = []
    for b in all_blocks():
        where = f"{b.page}:{b.line}"
        if b.language not in LANGUAGES:
            bad.append(f"{where}: fence language {b.language!r}; use one of {', '.join(LANGUAGES)}")
        elif b.not_run is not None and b.language != "python":
            bad.append(f"{where}: a 'not run' note above a {b.language} block (only Python runs)")
    return bad
