"""Compile-check one lock entry's bindings for one architecture, overload by overload on failure.

    COOPGEN_CCCL=3.4.3 python -m tools.compile_check --arch sm_90 [--json]

Each class's smoke kernel (tests/cpu/smoke.py: one call of every bound overload) is compiled
and linked to a cubin, as tests/cpu/test_bindings_compile.py does. When a class fails, each of
its overloads is compiled alone, so the report names the overloads that fail and NVRTC's first
error line for each. `coopgen lock-add` runs this; the exit status is 1 when any overload fails.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "cpu"))

SIG_ARGS = ("int32[::1]", "int32[::1]", "int32")


def first_error_line(message: str) -> str:
    """NVRTC's first ``error`` line of a failed compile (else the message's first line)."""
    for line in message.splitlines():
        if re.search(r"\berror\b", line):
            return line.strip()
    return message.strip().splitlines()[0] if message.strip() else "(no message)"


def _link(cls, arch: tuple[int, int], folder: Path) -> str | None:
    """None when the class's smoke kernel links for ``arch``, else the first error line."""
    from numba.cuda import types

    from coopgen.linkcheck import compile_kernel_pieces, link_pieces
    from smoke import build_kernel

    sig = (types.int32[::1], types.int32[::1], types.int32)
    try:
        kernel, _, _ = build_kernel(cls, cls.scope, folder)
        link_pieces(compile_kernel_pieces(kernel, sig, arch=arch), arch=arch)
    except Exception as e:  # noqa: BLE001 - any failure is reported with its first line
        return first_error_line(f"{type(e).__name__}: {e}")
    return None


def check(arch: tuple[int, int]) -> tuple[int, list[dict]]:
    """(overloads checked, [{class, signature, error}] for each that fails)."""
    from coopgen.model import registry

    failures, checked = [], 0
    with tempfile.TemporaryDirectory() as tmp:
        for cls in registry.package().CLASSES:
            if not cls.methods and not cls.constructors:
                continue
            checked += len(cls.methods) + len(cls.constructors)
            folder = Path(tempfile.mkdtemp(dir=tmp))
            if _link(cls, arch, folder) is None:
                continue
            # Alone, each method keeps the constructors it may need (a parent object).
            for method in cls.methods:
                error = _link(dataclasses.replace(cls, methods=(method,)), arch,
                              Path(tempfile.mkdtemp(dir=tmp)))
                if error:
                    failures.append({"class": cls.name, "signature": method.signature,
                                     "error": error})
            if not failures or failures[-1]["class"] != cls.name:
                error = _link(dataclasses.replace(cls, methods=()), arch,
                              Path(tempfile.mkdtemp(dir=tmp)))
                failures.append({"class": cls.name, "signature": "(constructors)",
                                 "error": error or "fails only with all its overloads together"})
    return checked, failures


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", default="sm_90", help="sm_XY (default sm_90)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    m = re.fullmatch(r"sm_(\d+)(\d)", args.arch)
    if not m:
        p.error(f"--arch {args.arch!r}: give sm_XY, e.g. sm_90")
    from coopgen.model import registry

    checked, failures = check((int(m.group(1)), int(m.group(2))))
    if args.json:
        print(json.dumps({"cccl": registry.package().CCCL, "arch": args.arch,
                          "checked": checked, "failures": failures}, indent=1))
    else:
        print(f"CCCL {registry.package().CCCL}, {args.arch}: {checked} overloads compiled, "
              f"{len(failures)} failed")
        for f in failures:
            print(f"  {f['class']}::{f['signature']}: {f['error']}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
