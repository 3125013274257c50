"""The runtime's shape (docs/architecture.md): stage subpackages that import only the stages
below them, no import circles, nothing of numba below the backend, and pieces small enough to
read. Read from the source with ``ast``, so a lazy import inside a function counts too."""
import ast
from pathlib import Path

import pytest

RUNTIME = Path(__file__).resolve().parents[2] / "bindings"
#: Stages, bottom up: a module may import its own stage and those below it. The backends are
#: siblings: lower (numba-cuda), mlir (numba-cuda-mlir) and cute (CuTe DSL).
STAGES = ("model", "types", "resolve", "codegen", ("lower", "mlir", "cute"), "api")
BACKENDS = STAGES[4]
NUMBA_FREE = ("model", "types", "resolve", "codegen")
BACKEND_PACKAGES = ("numba", "numba_cuda", "llvmlite", "numba_cuda_mlir", "cutlass")
MAX_MODULE_LINES, MAX_FUNCTION_LINES = 500, 80
#: The whole hand-written runtime (issue 20's budget: new features pay for themselves), and
#: the numba-cuda-mlir backend's own budget beside it.
#: issue 25: +69 (callbacks, shuffle, phrases), +31 (NVVM's version, per-kernel launch bytes);
#: issue 28: +9 (cub::detail's method keywords); issue 26: +210 (two backends side by side:
#: their registry, per-backend hooks and linkcheck's dispatch); +101 (the IR rewrite of
#: cuda.coop's forms and StatefulFunction shared by both backends, resolve.kernel_ir); mlir +6
#: (vector types with both backends installed), +83 (ThreadData, prim[ts], in-kernel
#: TempStorage, enum members, plain Python and stateful operators, operators on half, bfloat16,
#: complex and vector items, complex values to shims); issue 27: +6 (the link check compiles
#: and links a kernel with its own launch bounds and register limit; mlir +4, the same).
#: issue 33: +1299 (cuda.coop's group-first API: the groups and the table routing each group
#: call to a Pythonic entry point, data in api.groups and resolve.groups; the shared IR rewrite
#: of group calls, resolve.group_calls, and the device helpers it calls, resolve.group_helpers);
#: issue 34: +64 (free functions: a spec kind called with no object, coopgen.thread, a
#: thread's rank and inferred, checked thread counts, iterator value types, argument defaults);
#: issue 35: +29 (model.backends' call_in_trace and tracing, through which api's objects hand
#: in-kernel calls to a compiler that traces Python).
#: issue 33: +77 (cuda.coop's run-time preconditions: route bounds, their device checks and
#: each backend's trap; ThreadData sized by a kernel argument through literal dispatch); +85
#: (TempStorage.reserve, is_member/sync_aligned and partial groups, transposing partial loads
#: putting back the slots past valid_items); +9 (sorts of scalar keys as one-item arrays); +3
#: (Python operators of group calls compiled on numba-cuda-mlir too); cuda.coop's run-length
#: decoding: +63 (its window past the decoded size, 64-bit decoded offsets,
#: run_length_decode_into's loop over the windows, a route's result size as data, the
#: helpers reading numpy; +16 where both met in resolve.group_calls and group_helpers).
#: Group scans, ranks and counters as NVIDIA's suite has them: +90 (prefix callbacks with a
#: state, aggregates and warp valid_items in the scan routes; radix ranks of signed and
#: floating keys by their order; 64-bit atomic histogram counters); +11 where it met the rest.
#: Groups as NVIDIA's suite has them: +152 (rank/count at every level, cuda.coop's finer-within-
#: coarser; sum/reduce over a block's groups of warps, two warp reductions through shared
#: memory; groups made at module level; NotImplementedError for grid and cluster collectives;
#: a warp scan's valid lanes checked; the groups in a module of their own); +41 (a cluster's
#: rank, count and sync: each backend's one-statement PTX device functions).
#: NVIDIA's suite, second round: +62 (gpu_dataclass arguments on both compilers through one
#: argument handler; device functions inlined into the kernel on numba-cuda-mlir, the
#: lookups and copies that inlining leaves).
#: cuda.coop.numba_mlir's single-phase calls as NVIDIA's suite writes them: +121 (positionals
#: past the keywords' slots, ``name=True`` declaring a positional value, dtype keywords,
#: ``offset=`` and a StatefulFunction's positional state of _block/_warp; two-phase radix calls
#: with their bits or values; ThreadData typed by a cast and its items_per_thread; TempStorage
#: items; radix_rank_keys).
#: NVIDIA's suite, histograms: +24 (the sorting histogram gets a copy of its samples, which
#: CUB sorts in place; a two-phase object's methods as entries of their own, histo.init).
#: Run-length decoding's preconditions as route bounds: +77 (negative or interior empty runs
#: and the sum past the decoded offsets' type, block-wide by shuffles; negative offsets; the
#: destination's room; a known variable outside its range an error at compile time).
#: +20: the private module cuda.coop's tests import names from (its compiler's error, the
#: device's shared memory limits).
#: +14: a value numba-cuda reads from the launch's arguments is bounded on the device, not
#: at compile time (the plans' value lookup tells fixed values from launch values).
#: +9: a warp's int64 sums shuffled as two 32-bit halves (numba-cuda-mlir shuffles 32 bits).
#: +104: cuda.coop's fused decode made on the host (``rld.decode(dtypes, with_...)``: its
#: host checks and call slots; the shared rewrite making the object and calling its method),
#: and a constant per-thread count that is not a positive int refused before typing.
#: +84: cuda.coop's layout of TempStorage reservations (members of the storage's type, shared
#: or sliced as its uses are, through an accessor shim; so past 48 KB dynamic), ``reserve``
#: read as a value, host-made storage seen by every block's rewrite, and the CPU link of a
#: declare_device's CUDA C++ (NVIDIA's suite links such code beside its kernels).
#: +51: numba-cuda's rewrite goes over the whole function at once, after inlining the device
#: functions that call coopgen or get its objects (numba inlines only after its rewrites, so
#: a ThreadData typed, or a reserve made, in an inline="always" helper was not seen).
#: +17: the coopgen command starts without numba and the backends (loaded on first use).
#: +6: an operator's inner code objects (a comprehension, an inner lambda) identified by content, so
#: its symbol, and the shim cache with it, hold across processes.
#: +2: TempStorage.reserve's keywords taken in order, a later one without its predecessor refused.
#: +31: three of cuda.coop's old-suite examples: make_reduce's operator third, a number literal
#: converted to the dtype an object or a later argument names, complex TempStorage sizes.
#: +52: issue 35's group-first calls in CuTe DSL kernels: group calls, group queries and
#: ThreadData hand their in-kernel calls to a backend that traces Python; a group query's
#: arguments and the bit-range check moved out of numba's rewrite, shared with CuTe DSL's.
#: +10: the kernel cache keeps numba-cuda's bfloat16 shim source, so bfloat16 kernels cache.
#: +18: which keys a radix rank orders by value, and CUB's twiddle of their bits without a
#: branch (numpy and CuTe DSL's traced values alike), shared by CuTe DSL and the host tests.
MAX_RUNTIME_LINES = 9138
#: issue 33: +8 (its rewrite's cuda module; arrays of a value's type); +37 (its device trap,
#: literal dispatch of a ThreadData size, the link check following it; +6: its literal kernel
#: arguments known to the rewrite, numba-cuda-mlir's local arrays sized by one); run-length
#: decoding: +20 (a group helper that calls a primitive is inlined into the kernel).
#: +10: its one-statement PTX device functions (the trap, a cluster's registers and barrier).
#: NVIDIA's suite, second round: +88 (gpu_dataclass instances as records and their argument
#: handler; the kernel's device functions that call coopgen inlined into it, unless
#: marked inline="never"). +11: its local and shared record arrays seen as records (their
#: length counted bytes, so loops over it ran past the array).
#: +40: a TempStorage reservation as a memref over its member of the storage (the address an
#: accessor shim returns), where it was a shared-memory global of its own.
MAX_MLIR_LINES = 1298
#: issue 35: the CuTe DSL backend's own budget. +11: clang's precompiled header and
#: cuda.coop's storage-first object calls, each within budget alone, together. +51: a signed
#: tensor beside unsigned fragments read as theirs and warned of (CuTe DSL types a pointer's
#: tensor signed), half-precision numpy constants, clang's nvcc-like unrolling.
#: +286: cuda.coop's group-first calls in CuTe DSL kernels (cute/groups.py): the same plans
#: numba's IR rewrite carries out (about 500 lines of IR code a traced kernel cannot use),
#: carried out on traced values, with the shared group helpers and CuTe forms of the five
#: that branch on a run-time value.
#: +5: radix ranks of signed and floating keys by their order (the key bit-cast, twiddled).
MAX_CUTE_LINES = 1253
#: issue 36: the PyTorch surface and the autotuner, optional modules beside the staged runtime
#: (nothing of the runtime imports them), with their own budget.
PYTORCH_SURFACE = ("torch", "autotune")
#: +16: the launch's cuLaunchKernel called untyped, its stream pointers made once (half the host
#: time of a typed ctypes call).
#: +22: the autotuner's prune= and copies= (the candidates worth timing for a call's
#: arguments; inputs to cycle through, so a kernel is not timed on its own L2).
#: +67: launches with a thread-block cluster shape (``cluster=``: ``cuLaunchKernelEx``, its
#: launch configuration packed per call; numba's first launch stopped once it compiled).
#: +30: a view's alignment checked on every call, before the launch (``MisalignedView``: a
#: float16 row seen as 16-byte items 2 bytes off a boundary would fault in the kernel).
#: +20: the autotuner's timer in the benchmark's batches of 10 calls, a batch timed again where
#: the host fell behind the GPU's sleep, and the copies cycled through across candidates.
#: +45: every launch through cuLaunchKernelEx with its configuration made once and rewritten
#: only when the grid, block or stream changes, the parameters that change written in place
#: (one generated function with the checks), and a launcher's kept launch (``guarded``, its
#: sized form for a caller that checks the shapes): the host time of a call cut by a fifth.
#: +10: a number, and a sized launch's sizes, written only where the buffer holds others.
#: +19: numba-cuda-mlir kernels: a new signature's first launch on a dispatcher of its own (one
#: holding other signatures launched a wrong kernel), and the compile result it reuses found.
MAX_PYTORCH_SURFACE_LINES = 1120


def modules() -> dict[str, Path]:
    """{dotted name under coopgen: path} of the hand-written runtime."""
    out = {}
    for path in sorted(RUNTIME.rglob("*.py")):
        rel = path.relative_to(RUNTIME)
        if rel.parts[0] == "_generated":
            continue
        parts = rel.with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imports(name: str, path: Path) -> tuple[set[str], set[str]]:
    """(runtime modules imported, outside top-level packages imported) by one module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    runtime, outside = set(), set()
    known = modules()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("coopgen."):
                    runtime.add(alias.name[len("coopgen."):])
                else:
                    outside.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".") if package else []
                base = base[:len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            elif (node.module or "").startswith("coopgen"):
                target = node.module[len("coopgen"):].lstrip(".")
            else:
                outside.add((node.module or "").split(".")[0])
                continue
            for alias in node.names:  # "from . import x" may name a module
                sub = f"{target}.{alias.name}" if target else alias.name
                runtime.add(sub if sub in known else target)
    return {m for m in runtime if m in known and m != name and not m.startswith("_generated")}, \
        outside


def stage_of(name: str) -> int:
    top = name.split(".")[0]
    return next((i for i, s in enumerate(STAGES)
                 if (top == s if isinstance(s, str) else top in s)), len(STAGES))


def test_lower_stages_never_import_upper_ones():
    wrong = [f"{name} imports {dep}" for name, path in modules().items()
             for dep in imports(name, path)[0] if stage_of(dep) > stage_of(name)]
    assert not wrong, "\n".join(wrong)


def test_neither_backend_imports_the_other_and_api_imports_none():
    """Each installed backend registers api's objects itself (coopgen.model.backends); the
    top level imports the backends of the compilers installed by name."""
    wrong = [f"{name} imports {dep}" for name, path in modules().items()
             for dep in imports(name, path)[0]
             if dep.split(".")[0] in BACKENDS and dep.split(".")[0] != name.split(".")[0]]
    assert not wrong, "\n".join(wrong)


def test_backends_import_only_their_own_compiler():
    own = {"lower": {"numba", "numba_cuda", "llvmlite"}, "mlir": {"numba_cuda_mlir"},
           "cute": {"cutlass"}}
    wrong = [f"{name} imports {pkg}" for name, path in modules().items()
             if (top := name.split(".")[0]) in BACKENDS for pkg in imports(name, path)[1]
             if pkg in BACKEND_PACKAGES and pkg not in own[top]]
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("stage", NUMBA_FREE)
def test_middle_stages_import_nothing_of_numba(stage):
    wrong = [f"{name} imports {pkg}" for name, path in modules().items()
             if name.split(".")[0] == stage for pkg in imports(name, path)[1]
             if pkg in BACKEND_PACKAGES]
    assert not wrong, "\n".join(wrong)


def test_top_level_modules_leave_numba_to_the_backend():
    wrong = [f"{name} imports {pkg}" for name, path in modules().items()
             if "." not in name and name and stage_of(name) == len(STAGES)
             for pkg in imports(name, path)[1] if pkg in BACKEND_PACKAGES]
    assert not wrong, "\n".join(wrong)


def test_no_import_circles():
    graph = {name: imports(name, path)[0] for name, path in modules().items()}
    # a package's __init__ importing its own modules is no circle through them
    graph = {n: {d for d in deps if not (n == "" or d.startswith(n + "."))}
             for n, deps in graph.items()}
    cycles, state = [], {}

    def visit(node, stack):
        state[node] = "open"
        for dep in sorted(graph.get(node, ())):
            if state.get(dep) == "open":
                cycles.append(stack[stack.index(dep):] + [dep])
            elif dep not in state:
                visit(dep, stack + [dep])
        state[node] = "done"

    for node in sorted(graph):
        if node not in state:
            visit(node, [node])
    assert not cycles, "\n".join(" -> ".join(c) for c in cycles)


def test_modules_and_functions_are_small():
    long = []
    for name, path in modules().items():
        text = path.read_text(encoding="utf-8")
        if len(text.splitlines()) > MAX_MODULE_LINES:
            long.append(f"module {name}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > MAX_FUNCTION_LINES:
                    long.append(f"function {name}.{node.name}: {n} lines")
    assert not long, "\n".join(long)


def test_the_runtime_stays_within_its_budget():
    lines = {name: len(path.read_text(encoding="utf-8").split("\n")) - 1 for name, path in modules().items()}
    mlir = sum(n for name, n in lines.items() if name.split(".")[0] == "mlir")
    surface = sum(n for name, n in lines.items() if name.split(".")[0] in PYTORCH_SURFACE)
    cute = sum(n for name, n in lines.items() if name.split(".")[0] == "cute")
    total = sum(lines.values()) - mlir - surface - cute
    assert total <= MAX_RUNTIME_LINES, f"the runtime has {total} lines, over {MAX_RUNTIME_LINES}"
    assert mlir <= MAX_MLIR_LINES, f"coopgen.mlir has {mlir} lines, over {MAX_MLIR_LINES}"
    assert cute <= MAX_CUTE_LINES, f"coopgen.cute has {cute} lines, over {MAX_CUTE_LINES}"
    assert surface <= MAX_PYTORCH_SURFACE_LINES, \
        f"coopgen.torch and coopgen.autotune have {surface} lines, over " \
        f"{MAX_PYTORCH_SURFACE_LINES}"


def test_nothing_of_the_runtime_imports_the_pytorch_surface():
    wrong = [f"{name} imports {dep}" for name, path in modules().items()
             if name.split(".")[0] not in PYTORCH_SURFACE
             for dep in imports(name, path)[0] if dep.split(".")[0] in PYTORCH_SURFACE]
    assert not wrong, "\n".join(wrong)


def test_the_coopgen_command_starts_without_numba():
    """`coopgen generate` (parse, emit, write) imports no numba or backend: that import takes
    seconds of the command's time. The runtime still loads where a command uses it."""
    import subprocess
    import sys

    script = ("import sys; sys.argv[0] = 'coopgen'\n"
              "from coopgen.generator import cli, emit, emit_docs, emit_types, pipeline, write\n"
              "assert 'numba' not in sys.modules, 'the coopgen command imported numba'\n"
              "import coopgen; coopgen.block; from coopgen.coop import block\n"
              "assert 'numba' in sys.modules\n")
    subprocess.run([sys.executable, "-c", script], check=True, cwd=Path(__file__).parent)
