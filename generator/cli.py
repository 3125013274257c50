"""The ``coopgen`` command: generate, coverage, diff, doctor, cache, lock-digest, lock-add."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import gc
import importlib
import importlib.metadata
import importlib.util
import json
import os
import shutil
import sys
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor, as_completed
from pathlib import Path

from . import headers
from .model import ApiModel, from_json
from .report import coverage, diff, format_coverage, format_diff


def _checkout() -> Path:
    root = headers.checkout_root()
    if root is None:
        raise headers.HeaderError(
            "generate needs a coopgen checkout (it writes bindings/_generated and docs/api "
            "there): run it inside a clone of the coopgen repository, with coopgen[generate] "
            "installed")
    return root


def generated_dir() -> Path:
    """Where ``coopgen generate`` writes the bindings: the checkout's bindings/_generated."""
    return _checkout() / "bindings" / "_generated"


def docs_api_dir() -> Path:
    return _checkout() / "docs" / "api"


def model_path(entry: headers.LockEntry) -> Path:
    """The model of a lock entry: the checkout's when run in one, else the installed
    package's (the wheel ships every entry's cub_api.json)."""
    root = headers.checkout_root()
    base = root / "bindings" / "_generated" if root else headers.packaged_lock_path().parent
    return base / entry.tag / "cub_api.json"


def load_model(entry: headers.LockEntry) -> ApiModel:
    """The committed model of a lock entry (in a checkout, generated when absent)."""
    path = model_path(entry)
    if not path.is_file():
        if headers.checkout_root() is None:
            raise headers.HeaderError(f"{path}: no model of CCCL {entry.cccl} in this install")
        from .pipeline import build_model
        return build_model(entry)[0]
    return from_json(path.read_text(encoding="utf-8"))


def bound_overloads(entry: headers.LockEntry) -> frozenset[str]:
    """``Class::Signature`` of every overload the generated bindings bind and compile-check."""
    try:
        mod = importlib.import_module(f"coopgen._generated.{entry.tag}")
    except ImportError:
        return frozenset()
    return frozenset(getattr(mod, "BOUND_AND_CHECKED", ()))


def _entries(args) -> tuple[headers.LockEntry, ...]:
    entries = headers.load_lock()
    return (headers.find_entry(args.cccl, entries),) if args.cccl else entries


def generate_entries(entries: tuple[headers.LockEntry, ...]) -> None:
    """Parse and write each of ``entries``; then the pages that list every lock entry.

    Three streams of work share the cores. libclang's parses (most of the work) run on one
    thread per core: libclang holds no GIL while it parses, and one process makes the preamble
    once (``parse._preamble``). This thread walks each translation unit and applies the model
    passes as each parse is done (they start in lock order, the newest first): the Python work
    that calls into libclang stays on one thread, since two would hand the GIL back and forth
    on every call. A writer process writes each model's specs, docstrings and reference pages
    (the other half of the Python work), keeping the supported-types answers every entry
    shares (``emit_types._ANSWERS``); it makes them ahead from the committed models
    (``_make_ahead``) while a core would idle.

    What others wait for gets the cores first: the preamble, which every parse waits for, and
    the walks, which the writes wait for, run at this process's priority; the parses below it,
    and the writer lower still (``_lower_priority``): it takes what the others leave, and after
    the last parse no other write is left to queue behind."""
    if importlib.util.find_spec("clang") is None:
        raise headers.HeaderError("generate needs libclang: pip install -e '.[generate]' in "
                                  "the coopgen checkout")
    collecting = gc.isenabled()
    # The walks and the writes make millions of objects that live to the end, next to none in
    # reference cycles: the collector's passes over them were a sixth of their time. Off
    # before the writer is forked, so there too.
    gc.disable()
    try:
        _generate_entries(entries)
    finally:
        if collecting:
            gc.enable()


def _generate_entries(entries: tuple[headers.LockEntry, ...]) -> None:
    from .parse import make_preamble

    types_page, made, writes, parses = None, {}, {}, {}
    with _writer(entries) as writer:
        # started before the headers' check (Python work, on this thread meanwhile); a failure
        # here is the first parse's to raise, when it makes the preamble itself
        preamble = threading.Thread(target=_quietly, args=(make_preamble,), name="preamble")
        preamble.start()
        try:
            with ThreadPoolExecutor(min(len(entries), os.cpu_count() or 1),
                                    initializer=_lower_priority) as parsing:
                _generate(entries, writer, parsing, parses, writes)
        finally:
            preamble.join()
        for entry in entries:  # reported in lock order
            model, warnings, walk_s, written = writes[entry]
            for w in warnings:
                print(f"warning: {w}", file=sys.stderr)
            count, write_s, page, bound = written.result()
            print(_summary(entry, model, count, walk_s + write_s), flush=True)
            types_page = page or types_page
            made[entry.cccl] = (model, bound)
    write_release_files(types_page, made)


def _generate(entries, writer, parsing, parses: dict, writes: dict) -> None:
    """``generate_entries``' parses, walks and writes: ``writes`` maps each entry to (model,
    warnings, seconds of its walk, its write's future)."""
    from .pipeline import build_model, parse_entry

    try:
        for entry in entries:
            parses[parsing.submit(parse_entry, entry, headers.locate(entry))] = entry
        # the release pages' emitters, imported while this thread waits for the first parse
        importlib.import_module(f"{__package__}.emit_docs")
        # each parse is walked as soon as it is done: a core never waits on an earlier
        # entry's parse while a later one's waits to be walked
        for parse in as_completed(parses):
            entry = parses[parse]
            t0 = time.perf_counter()
            model, warnings = build_model(entry, parse.result())
            writes[entry] = (model, warnings, time.perf_counter() - t0,
                             writer.submit(write_entry, entry, model))
    except BaseException:
        for future in list(parses) + [w[-1] for w in writes.values()]:
            future.cancel()  # what has not begun
        raise


def _quietly(fn) -> None:
    with contextlib.suppress(Exception):
        fn()


#: How far below this process the writer runs: below the parse threads (10), so that it takes
#: what they leave (while the preamble is made, after a parse thread's last parse) and a share
#: of the rest that on two cores makes it done about when the last walk is.
_WRITER_NICE = 15


def _lower_priority(by: int = 10) -> None:
    """Raise the calling thread's nice value ``by`` (on Linux each thread has its own;
    libclang's parse thread takes its caller's): the parse threads, which the walks and the
    preamble must not wait for, and, lower still, the writer process."""
    with contextlib.suppress(AttributeError, OSError):
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))


class _InPlace:
    """The writer where no second process is forked (one core, threads running, no fork): each write
    runs in this process when asked for."""

    def submit(self, fn, *args):
        done = Future()
        done.set_result(fn(*args))
        return done

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def _writer(entries: tuple[headers.LockEntry, ...] = ()):
    """The writer process of ``generate_entries``, forked now: before any thread starts (a
    fork copies only the thread that forks, and a lock another thread held would stay held
    in the child). It imports the emitters, then makes the files of ``entries`` ahead from
    their committed models (``_make_ahead``). Where this process runs threads already (a
    caller's), or cannot fork, the writes run here."""
    import multiprocessing

    if (os.cpu_count() or 1) < 2 or threading.active_count() > 1 \
            or "fork" not in multiprocessing.get_all_start_methods():
        return _InPlace()
    pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"),
                               initializer=_lower_priority, initargs=(_WRITER_NICE,))
    pool.submit(_make_ahead, entries)
    return pool


#: The writer process's files made ahead: entry -> (the committed model, its files' texts).
_AHEAD: dict = {}


def _make_ahead(entries: tuple[headers.LockEntry, ...]) -> None:
    """Make the files of each of ``entries`` from its committed model, before the parses give
    the new one: at first a core idles (while the preamble is made, the parses wait), and after
    the last parse its write would hold up the end. The new model is most often the committed
    one, and ``write_entry`` then takes these texts; where it is not, they are dropped, and the
    supported-types answers (``emit_types._ANSWERS``) still serve the classes that are alike."""
    importlib.import_module(f"{__package__}.emit_docs")
    for entry in entries:
        try:
            committed = from_json(model_path(entry).read_text(encoding="utf-8"))
            _AHEAD[entry] = (committed, entry_texts(entry, committed))
        except Exception:  # noqa: BLE001 (none yet, or of an older schema or tables: not needed)
            continue


@dataclasses.dataclass(frozen=True)
class _Texts:
    """What ``write_entry`` writes of one model."""
    package: list  # (name, text) in bindings/_generated/<tag>/
    pages: list  # (name, text) in docs/api/<cccl>/
    types_page: str | None  # the default entry's supported-types page
    bound: frozenset[str]  # the overloads it binds, for the pages of every entry


def entry_texts(entry: headers.LockEntry, model: ApiModel) -> _Texts:
    """The texts of every file ``write_entry`` writes of ``model``."""
    from .emit import bound_keys
    from .emit_docs import emit_docs, emit_types_page
    from .write import package_files

    return _Texts(package_files(entry, model), emit_docs(entry, model),
                  emit_types_page(entry, model) if entry == headers.load_lock()[0] else None,
                  frozenset(bound_keys(model)))


def write_entry(entry: headers.LockEntry, model: ApiModel) -> tuple[int, float, str | None,
                                                                     frozenset[str]]:
    """Write one lock entry's files from its model: (how many files, the seconds it took, for
    the default entry the supported-types page, of the table its docstrings made; the overloads
    it binds, for the pages of every entry). The files made ahead serve where the model is the
    committed one."""
    from .write import write_docs, write_outputs

    t0 = time.perf_counter()
    ahead = _AHEAD.pop(entry, None)
    texts = ahead[1] if ahead is not None and ahead[0] == model else entry_texts(entry, model)
    written = write_outputs(entry, model, generated_dir(), texts.package)
    written += write_docs(entry, model, docs_api_dir(), texts.pages)
    return len(written), time.perf_counter() - t0, texts.types_page, texts.bound


def _summary(entry: headers.LockEntry, model: ApiModel, files: int, seconds: float) -> str:
    n = sum(len(c.methods) + len(c.constructors) for c in model.classes)
    return (f"CCCL {entry.cccl}: {len(model.classes)} classes, {n} overloads, "
            f"{len(model.enums)} enums, {len(model.diagnostics)} parse errors; "
            f"wrote {files} files in {seconds:.2f} s")


def write_release_files(types_page: str | None = None, made: dict | None = None) -> None:
    """The files every lock entry appears in: the API index, the release matrix, the docs nav,
    the generated package's release list and its copy of the lock; and the supported-types
    page (``types_page``, else made from the default entry's model). ``made``: CCCL version ->
    (model, bound overloads) of the entries just generated (the others' are read back)."""
    from .emit import bound_keys
    from .write import write_lock_copy, write_release_pages

    entries, made = headers.load_lock(), made or {}
    models = [made[e.cccl][0] if e.cccl in made else load_model(e) for e in entries]
    bound = [made[e.cccl][1] if e.cccl in made else frozenset(bound_keys(m))
             for e, m in zip(entries, models)]
    write_release_pages(entries, models, bound, docs_api_dir(), _checkout() / "mkdocs.yml",
                        generated_dir(), types_page)
    write_lock_copy(headers.lock_path(), generated_dir())


def cmd_generate(args) -> int:
    generated_dir()  # a checkout, or a clear error
    generate_entries(_entries(args))
    return 0


def cmd_lock_add(args) -> int:
    from . import lock_add

    root = _checkout()
    t0 = time.perf_counter()
    entry, include_root = lock_add.find_release(args.version)
    print(f"CCCL {entry.cccl}: {entry.wheel_file} (sha256 {entry.wheel_sha256}), "
          f"{entry.header_files} header files, {entry.headers_digest}")
    print(f"cub_headers.lock: {lock_add.add_to_lock(headers.lock_path(), entry, default=False)}")
    entry = headers.find_entry(entry.cccl)
    generate_entries((entry,))
    nearest = lock_add.nearest_entry(entry, headers.load_lock())
    if nearest is not None:
        print(lock_add.format_summary(diff(load_model(nearest), load_model(entry))))
    failures = lock_add.compile_check(root, entry, args.arch)
    print(f"CCCL {entry.cccl}: {len(failures)} overload(s) fail to compile for {args.arch}")
    for f in failures:
        print(f"  {f['class']}::{f['signature']}: {f['error']}")
    if failures:
        print("Settle each in generator/data/overrides.toml: a [[release]] entry for this "
              "release (an exclusion with its reason, or the NVRTC option it needs); then run "
              "lock-add again.", file=sys.stderr)
        return 1
    if args.default:
        print(f"cub_headers.lock: {lock_add.add_to_lock(headers.lock_path(), entry, default=True)}")
        if lock_add.pin_default_wheel(root / "pyproject.toml", entry):
            print(f"pyproject.toml: the default wheel is now {entry.wheel}")
        write_release_files()
    print(f"lock-add {entry.cccl}: done in {time.perf_counter() - t0:.0f} s")
    return 0


def cmd_coverage(args) -> int:
    entry = headers.find_entry(args.cccl)
    report = coverage(load_model(entry), bound_overloads(entry))
    if args.json:
        print(json.dumps(report, indent=1))
    else:
        print(format_coverage(report))
    return 0


def cmd_diff(args) -> int:
    a = load_model(headers.find_entry(args.a))
    b = load_model(headers.find_entry(args.b))
    d = diff(a, b)
    print(json.dumps(d, indent=1) if args.json else format_diff(d))
    return 0


def _doctor_headers() -> list[str]:
    """Check every lock entry's headers; print what was found; return the problems. The
    default entry's must be present (an install ships them); others are fetched on first use,
    so only altered copies of them are problems."""
    problems = []
    entries = headers.load_lock()
    for entry in entries:
        try:
            found = headers.locate(entry, download=False)
            print(f"CCCL {entry.cccl}: headers OK ({found.source}: {found.include_root})")
        except headers.HeaderError as e:
            lines = str(e).splitlines()
            own = [line.strip() for line in lines if line.strip().startswith(
                ("shipped with coopgen", "installed wheel", "cached wheel"))]
            if entry is entries[0] or own:
                print(f"CCCL {entry.cccl}: PROBLEM: {lines[0]}")
                for line in lines[1:]:
                    print(f"  {line.strip()}")
                problems.append(f"CCCL {entry.cccl}'s headers do not match the lock" if own
                                else f"CCCL {entry.cccl}'s headers are missing")
            else:
                print(f"CCCL {entry.cccl}: not fetched yet (downloaded into the cache on first "
                      f"use with COOPGEN_CCCL={entry.cccl})")
    return problems


def gpu_archs() -> list[tuple[int, str, int]]:
    """(index, name, sm number) of each GPU the driver sees; empty without one."""
    try:
        from cuda.bindings import driver
        if driver.cuInit(0)[0] != driver.CUresult.CUDA_SUCCESS:
            return []
        err, count = driver.cuDeviceGetCount()
        cc = (driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
              driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)
        out = []
        for i in range(count if err == driver.CUresult.CUDA_SUCCESS else 0):
            dev = driver.cuDeviceGet(i)[1]
            major, minor = (driver.cuDeviceGetAttribute(a, dev)[1] for a in cc)
            name = driver.cuDeviceGetName(64, dev)[1].split(b"\0")[0]
            out.append((i, name.decode(errors="replace"), major * 10 + minor))
        return out
    except Exception:
        return []


def cmd_doctor(args) -> int:
    """What coopgen found, and exit status 1 when anything needed is missing or inconsistent:
    headers against the lock, the toolchain's majors, the toolchain against the driver, a GPU
    the toolchain cannot target."""
    from coopgen import __version__
    from coopgen.codegen import toolchain
    print(f"coopgen {__version__}")
    problems = _doctor_headers()
    for part in toolchain.parts():
        print(f"{part.name}: {part.version} ({part.where})")
    try:
        print(f"cuda-bindings: {importlib.metadata.version('cuda-bindings')}")
    except importlib.metadata.PackageNotFoundError:
        print("cuda-bindings: not installed")
    driver = toolchain.driver_version()
    print(f"driver: CUDA {driver[0]}.{driver[1]}" if driver else "driver: none (no GPU: "
          "kernels compile and link, launches need one)")
    gpus = gpu_archs()
    if gpus and toolchain.parts()[0].major is not None:  # NVRTC loads: check its targets
        from coopgen.codegen import nvrtc
        for index, name, sm in gpus:
            refused = nvrtc.unsupported_arch(sm)
            print(f"GPU {index}: {name}, sm_{sm}" + (f": PROBLEM: {refused}" if refused else ""))
            if refused:
                problems.append(f"GPU {index} (sm_{sm}) cannot be targeted")
    problems += toolchain.problems()
    try:
        print(f"libclang: libclang-ng {importlib.metadata.version('libclang-ng')}")
    except importlib.metadata.PackageNotFoundError:  # only needed to generate
        print("libclang: not installed; install coopgen[generate] to regenerate")
    from coopgen.codegen import cache
    print(f"cache: {cache.root()} (coopgen cache shows it)")
    for problem in problems:
        print(f"PROBLEM: {problem}")
    print("healthy" if not problems else f"{len(problems)} problem(s)")
    return 1 if problems else 0


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB"):
        if n < 1024:
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def _tree_bytes(d: Path) -> int:
    total = 0
    for f in d.rglob("*"):
        with contextlib.suppress(OSError):  # removed meanwhile
            total += f.stat().st_size if f.is_file() else 0
    return total


def cmd_cache(args) -> int:
    from coopgen.codegen import cache

    from . import pipeline
    hdir, mdir = cache.headers_dir(), pipeline.models_dir()
    if args.action == "clear":  # every shim entry (and the fetched headers)
        removed, freed = 0, 0
        for path, size, _ in cache.entries() + cache.entries(mdir):
            with contextlib.suppress(OSError):  # removed meanwhile, or a read-only folder
                path.unlink()
                removed, freed = removed + 1, freed + size
        if args.headers and hdir.is_dir():
            freed += _tree_bytes(hdir)
            shutil.rmtree(hdir, ignore_errors=True)
        print(f"removed {removed} entries from {cache.root() / 'ltoir'} and "
              f"{mdir}"
              + (f" and the fetched headers in {hdir}" if args.headers else "")
              + f" ({_size(freed)})")
        return 0
    shims = cache.entries()
    cap = _size(cache.max_bytes()) if cache.max_bytes() else "no cap"
    print(f"cache folder: {cache.root()} (COOPGEN_CACHE_DIR, else $XDG_CACHE_HOME/coopgen)")
    print(f"compiled shims: {cache.root() / 'ltoir'}: {len(shims)} entries, "
          f"{_size(sum(size for _, size, _ in shims))} of {cap} (COOPGEN_CACHE_MAX_SIZE; least "
          f"recently used go first)"
          + (" [disabled: COOPGEN_DISABLE_CACHE]" if cache.shim_dir() is None else ""))
    models = cache.entries(mdir)
    print(f"parsed API models: {mdir}: {len(models)} entries, "
          f"{_size(sum(size for _, size, _ in models))} (coopgen generate's libclang parses)")
    fetched = [(d.name, _tree_bytes(d)) for d in sorted(hdir.iterdir()) if d.is_dir()] \
        if hdir.is_dir() else []
    print(f"fetched CCCL headers: {hdir}: "
          f"{', '.join(f'{name} ({_size(size)})' for name, size in fetched) or 'none'}")
    return 0


def cmd_lock_digest(args) -> int:
    root = Path(args.include_root)
    digest, count = headers.digest_headers(root)
    print(f'headers_digest = "{digest}"\nheader_files = {count}')
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="coopgen", description=__doc__)
    from coopgen import __version__
    p.add_argument("--version", action="version", version=f"coopgen {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True)
    g = sub.add_parser("generate", help="parse CUB and write the model, bindings and API docs")
    g.add_argument("--cccl", help="one lock entry (default: all)")
    g.set_defaults(func=cmd_generate)
    c = sub.add_parser("coverage", help="public/hidden/bound overloads per class")
    c.add_argument("--cccl", help="lock entry (default: the first)")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=cmd_coverage)
    d = sub.add_parser("diff", help="API changes between two lock entries")
    d.add_argument("a")
    d.add_argument("b")
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_diff)
    sub.add_parser("doctor", help="which headers, CUDA libraries, driver and GPUs were found; "
                   "exit status 1 on a problem").set_defaults(func=cmd_doctor)
    ca = sub.add_parser("cache", help="show coopgen's cache folder, or clear it")
    ca.add_argument("action", nargs="?", choices=("show", "clear"), default="show")
    ca.add_argument("--headers", action="store_true",
                    help="with clear: also remove the CCCL headers fetched into the cache")
    ca.set_defaults(func=cmd_cache)
    ld = sub.add_parser("lock-digest", help="print the lock digest of a CCCL include root")
    ld.add_argument("include_root")
    ld.set_defaults(func=cmd_lock_digest)
    la = sub.add_parser("lock-add", help="add a CCCL release to the lock, generate and check it")
    la.add_argument("version", help="a CCCL version (3.4.3) or an nvidia-cuda-cccl one")
    la.add_argument("--default", action="store_true",
                    help="make it the default entry (the first), after the same checks")
    la.add_argument("--arch", default="sm_90", help="the architecture to compile-check")
    la.set_defaults(func=cmd_lock_add)
    args = p.parse_args(argv)
    try:
        return args.func(args)
    except headers.HeaderError as e:
        print(f"coopgen: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
