"""The CPU smoke kernels (tests/cpu/smoke.py: one call of every bound overload of a class)
written for CuTe DSL: the same generated calls, with CuTe's register and shared tensors for
coopgen's arrays, and the overloads this backend does not bind left out (stateful and pointer
operators, records). All classes of a scope go in one kernel: one clang compile per scope."""
import dataclasses
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cpu"))
import smoke  # noqa: E402

#: Parameters whose overloads coopgen.cute does not bind (docs/cute.md, "Not yet").
UNBOUND = {"prefix_callback"}
UNBOUND_BASES = {"CountsCallback", "DecomposerT"}

PRELUDE = '''
import cutlass
import cutlass.cute as cute
from coopgen import block, warp


def digit(key):  # a digit extractor: a Python function traced into the kernel's module
    return key & 15
'''


def bound(m) -> bool:
    return not any(p.role in UNBOUND or p.base in UNBOUND_BASES for p in m.params)


def _body(cls, scope: str) -> tuple[list[str], list[str]]:
    kept = dataclasses.replace(cls, methods=tuple(m for m in cls.methods if bound(m)),
                               constructors=tuple(c for c in cls.constructors if bound(c)))
    src, covered = smoke.kernel_source(kept, scope)
    body = src[src.index("def kernel(d_in, d_out, n):") + len("def kernel(d_in, d_out, n):"):]
    body = re.sub(r"local\.array\((\w+), np\.(\w+)\)",
                  lambda m: f"cute.make_rmem_tensor({m[1]}, cutlass.{m[2].capitalize()})", body)
    body = re.sub(r"shared\.array\((\w+), np\.(\w+)\)",
                  lambda m: f"smem.allocate_tensor(cutlass.{m[2].capitalize()}, "
                            f"cute.make_layout({m[1]}), 16)", body)
    body = re.sub(r"np\.(int32|uint32|float32|uint8)", lambda m: f"cutlass.{m[1].capitalize()}",
                  body)
    body = re.sub(r"(\w+)\[i\] = d_in\[i\]", r"\1[i] = \1.element_type(d_in[i])", body)
    return body.strip("\n").split("\n"), covered


def scope_source(classes, scope: str) -> tuple[str, list[str]]:
    """One ``@cute.kernel`` calling every bound overload of ``classes``, and the signatures."""
    lines = [PRELUDE, "", "@cute.kernel",
             "def kernel(d_in: cute.Tensor, d_out: cute.Tensor, n: cutlass.Int32):",
             "    smem = cutlass.memory.SmemAllocator()"]
    covered = []
    for cls in classes:
        if not any(bound(m) for m in (*cls.methods, *cls.constructors)):
            continue
        body, sigs = _body(cls, scope)
        lines += body
        covered += sigs
    lines += ["", "", "@cute.jit", "def launch(x: cute.Pointer, y: cute.Pointer, n: cutlass.Int32):",
              f"    kernel(cute.make_tensor(x, cute.make_layout(4096)), "
              f"cute.make_tensor(y, cute.make_layout(4096)), n).launch(",
              f"        grid=(1, 1, 1), block=({smoke.THREADS}, 1, 1))"]
    return "\n".join(lines) + "\n", covered


def build(classes, scope: str, tmp_path):
    """The scope's kernel module, written to ``tmp_path`` and imported: (launch, covered)."""
    src, covered = scope_source(classes, scope)
    mod = smoke.import_source(src, tmp_path / f"cute_smoke_{scope}.py", f"cute_smoke_{scope}")
    return mod.launch, covered, src
