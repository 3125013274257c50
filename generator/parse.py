"""Parse CUB's block/warp headers with libclang into the raw API model.

This is the only module that imports clang. It returns model objects (no cursors escape) with
every parameter's role still empty; ``roles.assign_roles`` fills them in afterwards.
"""
from __future__ import annotations

import functools
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import threading
from ctypes import byref, c_uint, c_void_p, cast
from dataclasses import dataclass
from pathlib import Path

from .model import (ApiModel, ClassModel, Diagnostic, Enum, EnumValue, FunctionModel,
                    MODEL_SCHEMA, Overload, Param, TempStorage, TemplateParam, snake_case)

#: The headers that make up the public block/warp API (20 in CCCL 3.0.1).
HEADER_GLOBS = ("cub/block/block_*.cuh", "cub/warp/warp_*.cuh")
#: Headers parsed for their namespace-scope functions (and enums) only: the thread-level
#: primitives and util_ptx's warp helpers.
FUNCTION_GLOBS = ("cub/thread/thread_*.cuh", "cub/util_ptx.cuh")
#: Where namespace-scope functions are collected from, and the family each prefix is.
FUNCTION_FAMILIES = (("cub/block/", "block"), ("cub/warp/", "warp"), ("cub/thread/", "thread"),
                     ("cub/util_ptx.cuh", "util"))
#: util_ptx's functions that act on a warp (the others are a thread's own).
WARP_UTIL = re.compile(r"^(Shuffle|Warp|Match|Lane)")
HIDDEN_MACRO = "_CCCL_DOXYGEN_INVOKED"


_LOAD_LOCK = threading.Lock()  # parse threads load libclang once


def _clang():
    import clang.cindex as ci
    import clang.native

    with _LOAD_LOCK:
        if not ci.Config.loaded:
            native = Path(clang.native.__file__).parent
            ci.Config.set_library_file(str(native / "libclang.so"))
            # libclang-ng adds its bundled libc++ headers unless told not to; CUDA's host
            # headers refuse libc++ on x86, so the parse uses gcc's libstdc++ (see clang_args).
            ci.Config.libcxx_dir = None
            ci.conf.lib  # noqa: B018 (loads it now, under the lock)
    return ci


@functools.lru_cache(maxsize=1)
def _gcc_cxx_include_dirs() -> tuple[str, ...]:
    """libstdc++'s include directories, as reported by the system g++."""
    try:
        out = subprocess.run(["g++", "-E", "-x", "c++", "-", "-v"], input="", capture_output=True,
                             encoding="utf-8", errors="replace").stderr
    except FileNotFoundError:
        return ()
    dirs, inside = [], False
    for line in out.splitlines():
        if line.startswith("#include <...> search starts here"):
            inside = True
        elif line.startswith("End of search list"):
            break
        elif inside and "c++" in line:
            dirs.append(line.strip())
    return tuple(dirs)


def _cuda_path() -> str | None:
    for home in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if home and Path(home, "include", "cuda_runtime.h").is_file():
            return home
    return None


@functools.lru_cache(maxsize=1)
def _stub_include_dir() -> str:
    # clang's CUDA wrapper includes curand_mtgp32_kernel.h, which CUDA 13.0 no longer ships.
    d = Path(tempfile.gettempdir()) / "coopgen-clang-stubs"
    d.mkdir(exist_ok=True)
    (d / "curand_mtgp32_kernel.h").touch()
    return str(d)


def clang_args(include_root: Path | None) -> list[str]:
    """libclang's arguments for a parse of the headers under ``include_root``; without it, those
    of the preamble (the same for every lock entry)."""
    import clang.native

    resource = Path(clang.native.__file__).parent / "resource"
    args = ["-x", "cuda", "--cuda-device-only", "--cuda-gpu-arch=sm_90", "-std=c++17",
            "-resource-dir", str(resource), "-nocudalib", "--no-cuda-version-check",
            "-nostdinc++", "-fretain-comments-from-system-headers",
            # the model records errors only: checking for warnings is a tenth of a parse
            "-w"]
    args += [f"-isystem{d}" for d in _gcc_cxx_include_dirs()]
    args.append(f"-I{_stub_include_dir()}")
    if include_root is not None:
        args.append(f"-isystem{include_root}")
    cuda = _cuda_path()
    if cuda:
        args.append(f"--cuda-path={cuda}")
    return args


#: Headers of libstdc++ (and the CUDA toolkit's NVTX) that CCCL's headers include: the same for
#: every lock entry, so the preamble reads them once per process instead of every parse (about a
#: third of a parse). A header that includes one of CCCL's own (the toolkit's cuda_fp16.h takes
#: <nv/target>) must not be here: the preamble's copy would shadow the release's (see
#: _shadowed). One a release does not include costs it nothing but the preamble's share; one
#: missing here is read by each parse, as before.
PREAMBLE_HEADERS = ("version", "cassert", "cstddef", "cstring", "cfloat", "climits", "cstdlib",
                    "cstdio", "cmath", "iterator", "iostream", "optional", "chrono", "atomic",
                    "nvtx3/nvtx3.hpp")


@functools.lru_cache(maxsize=4)
def _preamble(args: tuple[str, ...], headers: tuple[str, ...] = PREAMBLE_HEADERS
              ) -> tuple[str, tuple[str, ...]] | None:
    """A precompiled header of what every parse includes before the release's headers (clang's
    CUDA runtime wrapper: the toolkit's runtime headers, libstdc++'s <cmath>, ...) and of the
    ``headers`` outside the release that CCCL includes: (its path, the files it read). Made once
    per process under ``args`` (``clang_args`` less the include root) and removed when the
    process ends (a worker of ``coopgen generate`` too). None where clang cannot save it (an
    error in those headers): the parse then reads them itself."""
    import multiprocessing.util

    ci = _clang()
    folder = tempfile.mkdtemp(prefix="coopgen-preamble-")
    multiprocessing.util.Finalize(None, shutil.rmtree, args=(folder,),
                                  kwargs={"ignore_errors": True}, exitpriority=0)
    path = str(Path(folder, "preamble.pch"))
    # a header this toolkit or libstdc++ lacks is left out, not an error
    source = "".join(f"#if __has_include(<{h}>)\n#include <{h}>\n#endif\n" for h in headers)
    tu = ci.Index.create().parse(
        "coopgen_preamble.cu", args=list(args), unsaved_files=[("coopgen_preamble.cu", source)],
        options=ci.TranslationUnit.PARSE_INCOMPLETE | ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES)
    try:
        tu.save(path)
    except ci.TranslationUnitSaveError:
        return None
    return path, tuple(sorted({inc.include.name for inc in tu.get_includes()}))


def _shadowed(files: tuple[str, ...], include_root: Path) -> bool:
    """Whether one of the preamble's ``files`` is a header the release ships too (its last one,
    two or three path parts name a file of the release's tree, as ``nv/target`` would): the
    parse would see the preamble's copy, not the release's."""
    tops = set(os.listdir(include_root))  # cub, cuda, nv, thrust: only those paths can clash
    for name in files:
        parts = Path(name).parts
        if any(parts[-n] in tops and (include_root / Path(*parts[-n:])).is_file()
               for n in (1, 2, 3) if n < len(parts)):
            return True
    return False


_PREAMBLE_LOCK = threading.Lock()  # parses on several threads make the preamble once


def make_preamble() -> None:
    """Make the preamble now, the parses waiting for it: ``coopgen generate`` starts it before
    it checks the entries' headers against the lock."""
    with _PREAMBLE_LOCK:
        _preamble(tuple(clang_args(None)))


def _preamble_for(include_root: Path) -> str | None:
    """The preamble of a parse of ``include_root``: with the shared headers, unless the release
    ships one of the files they read; else clang's CUDA wrapper alone."""
    shared_args = tuple(clang_args(None))
    with _PREAMBLE_LOCK:
        made = _preamble(shared_args)
        if made is not None and _shadowed(made[1], include_root):
            made = _preamble(shared_args, ())
    return made and made[0]


def parse_key(include_root: Path, headers_digest: str, detail_classes: frozenset) -> str | None:
    """What :func:`parse` of these headers depends on, hashed: the headers (their lock digest,
    checked by ``headers.locate``), the classes asked for, this module's and the model's code,
    libclang's version, its arguments (the include folders) and the CUDA toolkit's version. Two
    parses alike in all of these give the same model, so a parse can be kept under this key.
    None where libclang is not libclang-ng (its version unknown)."""
    import importlib.metadata

    try:
        libclang = importlib.metadata.version("libclang-ng")
    except importlib.metadata.PackageNotFoundError:
        return None
    cuda = _cuda_path()
    h = hashlib.sha256()
    for part in (headers_digest, ",".join(sorted(detail_classes)), libclang,
                 "\0".join(clang_args(include_root)), _cuda_version_line(cuda) if cuda else ""):
        h.update(part.encode() + b"\0")
    for module in (__file__, Path(__file__).with_name("model.py")):
        h.update(Path(module).read_bytes())
    return h.hexdigest()


def _cuda_version_line(cuda: str) -> str:
    """The toolkit's ``#define CUDA_VERSION`` line (cuda.h), the version of its headers."""
    try:
        text = Path(cuda, "include", "cuda.h").read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    m = re.search(r"^#define\s+CUDA_VERSION\s+\d+", text, re.M)
    return m.group(0) if m else ""


def public_headers(include_root: Path) -> list[str]:
    found = []
    for pattern in HEADER_GLOBS:
        found += sorted(p.relative_to(include_root).as_posix() for p in include_root.glob(pattern))
    return found


# --- source-text facts libclang does not expose ---------------------------------------------

@functools.lru_cache(maxsize=None)
def _hidden_ranges(path: str) -> tuple[tuple[int, int], ...]:
    """Line ranges inside ``#ifndef _CCCL_DOXYGEN_INVOKED`` blocks (the undocumented members)."""
    ranges, stack = [], []
    for no, line in enumerate(Path(path).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        s = line.strip()
        if not s.startswith("#"):
            continue
        directive = s[1:].strip()
        if directive.startswith(("if", "ifdef", "ifndef")):
            hides = (directive.startswith("ifndef") and HIDDEN_MACRO in directive) or (
                directive.startswith("if") and f"!defined({HIDDEN_MACRO})" in directive.replace(" ", ""))
            stack.append((no, hides))
        elif directive.startswith(("else", "elif")) and stack:
            start, hides = stack[-1]
            if hides:
                ranges.append((start, no))
            stack[-1] = (no, False)
        elif directive.startswith("endif") and stack:
            start, hides = stack.pop()
            if hides:
                ranges.append((start, no))
    return tuple(ranges)


def _is_hidden(path: str, line: int) -> bool:
    return any(a < line < b for a, b in _hidden_ranges(path))


_COMMENT_MARK = re.compile(r"^\s*(//[!/]<?|/\*[*!]<?|\*/|\*)")


def _clean_comment(raw: str | None) -> str:
    if not raw:
        return ""
    lines = []
    for line in raw.splitlines():
        line = _COMMENT_MARK.sub("", line).rstrip()
        lines.append(line[1:] if line.startswith(" ") else line)
    return "\n".join(lines).strip().removesuffix("*/").strip()


def _tokens(cursor) -> list[str]:
    return [t.spelling for t in cursor.get_tokens()]


@functools.lru_cache(maxsize=64)
def _source_bytes(path: str) -> bytes:
    return Path(path).read_bytes()


def _join_tokens(toks: list[str]) -> str:
    out = ""
    for t in toks:
        if out and (out[-1].isalnum() or out[-1] == "_") and (t[0].isalnum() or t[0] == "_"):
            out += " "
        elif out and t not in ",)]>:.;(<[" and out[-1] not in "(<[:.~!":
            out += " " if (t in "+-*/|&=?" or out[-1] in ",+-*/|&=?") else ""
        out += t
    return out.replace(",", ", ").replace(",  ", ", ")


# --- the walk --------------------------------------------------------------------------------

class _Reads:
    """What the walk reads of a cursor most often, read straight from libclang.

    cindex checks each cursor it reads against libclang's null cursor first (a C call and two
    Python frames per read: about half of the walk's time), and its child visits check each
    child again. The walk reads only cursors that libclang's child visits hand it, never the
    null cursor, so these reads skip the check; the rarer reads go through cindex."""

    def __init__(self, ci):
        self.lib = ci.conf.lib
        self.ci = ci
        self.names: dict[int, str] = {}  # a file's handle (stable in a translation unit) -> name
        self.public_access = ci.AccessSpecifier.PUBLIC.value

    def children(self, cursor) -> list:
        found, tu = [], cursor._tu

        def visit(child, _parent, _data):
            child._tu = tu  # keeps the translation unit alive while the cursor is, as cindex does
            found.append(child)
            return 1  # CXChildVisit_Continue

        self.lib.clang_visitChildren(cursor, self.ci.cursor_visit_callback(visit), found)
        return found

    def spelling(self, cursor) -> str:
        return self.ci._CXString.from_result(self.lib.clang_getCursorSpelling(cursor))

    def is_definition(self, cursor) -> bool:
        return bool(self.lib.clang_isCursorDefinition(cursor))

    def public(self, cursor) -> bool:
        return self.lib.clang_getCXXAccessSpecifier(cursor) == self.public_access

    def deleted(self, cursor) -> bool:
        return bool(self.lib.clang_CXXMethod_isDeleted(cursor))

    def place(self, location) -> tuple[str, int, int]:
        """(file name, line, offset) of a source location ("" where it has no file)."""
        f, line, offset = self.ci.c_object_p(), c_uint(), c_uint()
        self.lib.clang_getInstantiationLocation(location, byref(f), byref(line), None,
                                                byref(offset))
        if not f:
            return "", line.value, offset.value
        handle = cast(f, c_void_p).value
        if handle not in self.names:
            self.names[handle] = self.ci.File(f).name
        return self.names[handle], line.value, offset.value

    def file_name(self, cursor) -> str:
        return self.place(self.lib.clang_getCursorLocation(cursor))[0]

    def type(self, cursor, result: bool = False):
        """The cursor's type (its result type where ``result``)."""
        t = (self.lib.clang_getCursorResultType if result else self.lib.clang_getCursorType)(cursor)
        t._tu = cursor._tu
        return t

    def comments(self, cursor) -> tuple[str, str]:
        """The raw comment of a declaration, and its brief (each "" where it has none)."""
        text = self.ci._CXString.from_result
        return (text(self.lib.clang_Cursor_getRawCommentText(cursor)),
                text(self.lib.clang_Cursor_getBriefCommentText(cursor)))

    def has_eq(self, cursor) -> bool:
        """Whether the text of ``cursor`` has an ``=`` (tokenizing it is the slow part): False
        only where its extent lies in one file and that text has none."""
        extent = self.lib.clang_getCursorExtent(cursor)
        start_file, _, start = self.place(self.lib.clang_getRangeStart(extent))
        end_file, _, end = self.place(self.lib.clang_getRangeEnd(extent))
        if not start_file or start_file != end_file or start > end:
            return True
        return b"=" in _source_bytes(start_file)[start:end]

    def default_after_eq(self, cursor) -> str | None:
        """The text after a declaration's top-level ``=``: its default."""
        if not self.has_eq(cursor):
            return None
        toks = _tokens(cursor)
        depth = 0
        for i, t in enumerate(toks):
            if t in "(<[{":
                depth += 1
            elif t in ")>]}":
                depth -= 1
            elif t == "=" and depth == 0:
                return _join_tokens(toks[i + 1:])
        return None


class _Kinds:
    """The cursor kinds the walk compares, as ints: it reads a cursor's kind from the cursor's
    struct (``_kind_id``), and each ``CursorKind.X.value`` is a Python property call."""

    NAMES = ("NAMESPACE", "CLASS_TEMPLATE", "ENUM_DECL", "FUNCTION_TEMPLATE", "FUNCTION_DECL",
             "TEMPLATE_TYPE_PARAMETER", "TEMPLATE_NON_TYPE_PARAMETER",
             "TEMPLATE_TEMPLATE_PARAMETER", "PARM_DECL", "CONSTRUCTOR", "CXX_METHOD")

    def __init__(self, kinds):
        for name in self.NAMES:
            setattr(self, name, getattr(kinds, name).value)


class _Walker:
    def __init__(self, ci, include_root: Path, detail_classes: frozenset = frozenset()):
        self.ci = ci
        self.read = _Reads(ci)
        self.kinds = _Kinds(ci.CursorKind)
        self.detail_classes = detail_classes  # cub::detail classes bound as unstable
        self.K = ci.CursorKind
        self.root = include_root
        self.classes: dict[str, tuple] = {}  # qualname -> (cursor, namespace path)
        self.enums: dict[str, tuple] = {}
        self.functions: dict[str, list] = {}  # qualname -> [(cursor, namespace path), ...]
        self.rels: dict[str, str] = {}  # file name -> rel()

    def rel(self, cursor) -> str:
        return self.rel_path(self.read.file_name(cursor))

    def rel_path(self, name: str) -> str:
        """A file's path relative to the include root ("" for none)."""
        if name not in self.rels:  # resolving a path is slow, and a file has many cursors
            try:
                self.rels[name] = Path(name).resolve().relative_to(self.root.resolve()).as_posix()
            except ValueError:
                self.rels[name] = name
        return self.rels[name]

    def walk(self, cursor, ns: tuple[str, ...]):
        K, read = self.kinds, self.read
        for ch in read.children(cursor):
            kind = ch._kind_id  # the cursor's CXCursorKind: a field of its struct, no call
            if kind == K.NAMESPACE:
                name = read.spelling(ch)
                if not ns and name != "cub":
                    continue
                # CUB's ABI namespace (e.g. CUB_300001_SM_900) is inline: strip it from names.
                inline = bool(self.ci.conf.lib.clang_Cursor_isInlineNamespace(ch))
                self.walk(ch, ns if inline else ns + (name,))
            elif not ns:
                continue
            elif kind == K.CLASS_TEMPLATE:
                name = read.spelling(ch)
                if self.wanted(name, ns) and read.is_definition(ch) \
                        and self.rel(ch).startswith(("cub/block/", "cub/warp/")):
                    self.classes.setdefault("::".join(ns + (name,)), (ch, ns))
            elif kind == K.ENUM_DECL and ns == ("cub",) and read.is_definition(ch):
                if self.rel(ch).startswith(("cub/block/", "cub/warp/", "cub/thread/")):
                    self.enums.setdefault("cub::" + read.spelling(ch), ch)
            elif kind in (K.FUNCTION_TEMPLATE, K.FUNCTION_DECL) \
                    and ns in (("cub",), ("cub", "detail")):
                name = read.spelling(ch)
                if self.free_function(ch, name, ns):
                    self.functions.setdefault("::".join(ns + (name,)), []).append((ch, ns))

    def free_function(self, cursor, name: str, ns: tuple[str, ...]) -> bool:
        """A function of namespace cub (or a cub::detail one named as unstable) declared in a
        bound header; operators (``operator<<`` of the enums) are not API."""
        if ns == ("cub", "detail") and name not in self.detail_classes:
            return False
        return not name.startswith("operator") and bool(self.family(cursor))

    def family(self, cursor) -> str:
        rel = self.rel(cursor)
        return next((fam for prefix, fam in FUNCTION_FAMILIES if rel.startswith(prefix)), "")

    def wanted(self, name: str, ns: tuple[str, ...]) -> bool:
        """A Block*/Warp* class template, or a cub::detail one named as unstable."""
        return name.startswith(("Block", "Warp")) or self.unstable(name, ns)

    def unstable(self, name: str, ns: tuple[str, ...]) -> bool:
        return ns == ("cub", "detail") and name in self.detail_classes

    # template parameters -----------------------------------------------------------------
    def template_params(self, cursor) -> tuple[TemplateParam, ...]:
        K, read = self.kinds, self.read
        out = []
        for ch in read.children(cursor):
            ck = ch._kind_id
            if ck == K.TEMPLATE_TYPE_PARAMETER:
                kind, cpp = "type", ""
            elif ck == K.TEMPLATE_NON_TYPE_PARAMETER:
                kind, cpp = "value", read.type(ch).spelling
            elif ck == K.TEMPLATE_TEMPLATE_PARAMETER:
                kind, cpp = "template", ""
            else:
                continue
            name = read.spelling(ch)
            out.append(TemplateParam(name=name, kind=kind, cpp_type=cpp,
                                     default=read.default_after_eq(ch), keyword=snake_case(name)))
        return tuple(out)

    # parameters ---------------------------------------------------------------------------
    def param(self, p, index: int) -> Param:
        TK = self.ci.TypeKind
        t = self.read.type(p)
        spelling = t.spelling  # each read is a call into libclang: once
        ref = {TK.LVALUEREFERENCE: "lvalue", TK.RVALUEREFERENCE: "rvalue"}.get(t.kind, "")
        target = t.get_pointee() if ref else t
        pointer = target.kind == TK.POINTER
        inner = target.get_pointee() if pointer else target
        # An array's constness sits on its element type: check the spelling too.
        const = inner.is_const_qualified() or (inner.spelling if inner is not t else spelling
                                               ).startswith("const ")
        elem = extent = None
        m = re.search(r"\(&+\)\s*\[(.+)\]\s*$", spelling)
        if m:
            extent = m.group(1).strip()
            elem = re.sub(r"^const\s+", "", spelling[:m.start()].strip())
        # an unnamed parameter (CCCL 3.3.4's block_topk::max_keys(keys, int /*k*/, ...)) needs a
        # name to be passed by keyword: its position
        return Param(name=self.read.spelling(p) or f"arg{index}", type=spelling, const=const,
                     ref=ref, pointer=pointer, array_elem=elem, array_extent=extent,
                     default=self.read.default_after_eq(p), role="")

    def overload(self, m, kind: str, cls_name: str, inherited_from: str | None) -> Overload:
        K, read = self.kinds, self.read
        parm = K.PARM_DECL
        params = tuple(self.param(p, i) for i, p in
                       enumerate(c for c in read.children(m) if c._kind_id == parm))
        tparams = self.template_params(m) if m._kind_id == K.FUNCTION_TEMPLATE else ()
        name = cls_name if kind == "constructor" else read.spelling(m)
        signature = f"{name}({', '.join(p.type for p in params)})"
        path, line, _ = read.place(read.lib.clang_getCursorLocation(m))
        raw, brief = read.comments(m)
        doc = _clean_comment(raw)
        brief = brief.strip() or (doc.split("\n\n")[0].replace("\n", " ") if doc else "")
        return Overload(
            name=name, kind=kind, signature=signature, params=params,
            return_type="" if kind == "constructor" else read.type(m, result=True).spelling,
            template_params=tparams, static=bool(read.lib.clang_CXXMethod_isStatic(m)),
            hidden=_is_hidden(path, line) if path else False,
            inherited_from=inherited_from, excluded="", brief=brief, doc=doc,
            file=self.rel_path(path) if path else "", line=line)

    def members(self, cursor, cls_name: str, inherited_from: str | None = None):
        """Public constructors and methods of a class template, in declaration order."""
        K, read = self.kinds, self.read
        ctor, method, template = K.CONSTRUCTOR, K.CXX_METHOD, K.FUNCTION_TEMPLATE
        cls_spelling = read.spelling(cursor)
        ctors, methods = [], []
        for ch in read.children(cursor):
            kind = ch._kind_id
            if kind not in (ctor, method, template) or not read.public(ch) \
                    or (kind != template and read.deleted(ch)):
                continue  # deleted members (WarpExchange() = delete) are not API
            # A templated constructor is a FUNCTION_TEMPLATE spelled "Class<Args...>".
            spelling = read.spelling(ch)
            if kind == ctor or (kind == template and spelling.split("<")[0] == cls_spelling):
                ctors.append(self.overload(ch, "constructor", cls_name, inherited_from))
            elif not spelling.startswith("operator"):
                methods.append(self.overload(ch, "method", cls_name, inherited_from))
        return ctors, methods

    def public_bases(self, cursor) -> list:
        K, A = self.K, self.ci.AccessSpecifier
        bases = []
        for ch in cursor.get_children():
            if ch.kind == K.CXX_BASE_SPECIFIER and ch.access_specifier == A.PUBLIC:
                ref = ch.referenced
                if ref is not None and ref.kind == K.CLASS_TEMPLATE:
                    bases.append(ref)
                else:  # a dependent base: find the class template named in the specifier
                    for sub in ch.get_children():
                        if sub.kind == K.TEMPLATE_REF and sub.referenced is not None:
                            bases.append(sub.referenced)
                            break
        return bases

    def temp_storage(self, cursor) -> TempStorage:
        K = self.K
        for ch in cursor.get_children():
            if ch.spelling != "TempStorage":
                continue
            if ch.kind in (K.STRUCT_DECL, K.CLASS_DECL):
                return TempStorage("struct", "struct TempStorage")
            if ch.kind in (K.TYPE_ALIAS_DECL, K.TYPEDEF_DECL):
                target = ch.underlying_typedef_type.spelling
                form = "internal" if target.startswith("typename ") else "alias"
                return TempStorage(form, target)
        return TempStorage("none", "")

    def class_template_params(self, cursor) -> tuple[TemplateParam, ...]:
        """Template parameters, with constraints CUB states in its @tparam docs."""
        docs = {}
        for m in re.finditer(r"@tparam\s+(\w+)(.*?)(?=@tparam|@par|\Z)",
                             _clean_comment(cursor.raw_comment), re.S):
            docs[m.group(1)] = " ".join(m.group(2).split())
        out = []
        for t in self.template_params(cursor):
            if "must be a power of two" in docs.get(t.name, "") or \
                    "be a power of two" in docs.get(t.name, ""):
                t = TemplateParam(t.name, t.kind, t.cpp_type, t.default, t.keyword,
                                  "power_of_two")
            out.append(t)
        return tuple(out)

    def class_model(self, qualname: str, cursor, ns) -> ClassModel:
        name = cursor.spelling
        ctors, methods = self.members(cursor, name)
        own_names = {m.name for m in methods}
        bases = []
        temp_storage = self.temp_storage(cursor)
        for base in self.public_bases(cursor):
            bases.append(base.spelling)
            if temp_storage.form == "none" and self.temp_storage(base).form != "none":
                temp_storage = TempStorage("inherited", f"{base.spelling}::TempStorage")
            _, inherited = self.members(base, base.spelling, inherited_from=base.spelling)
            # A derived member hides every base overload of the same name (C++ name hiding).
            methods += [m for m in inherited if m.name not in own_names]
        scope = "block" if name.lower().startswith("block") else "warp"
        return ClassModel(
            name=name, qualname=qualname, scope=scope, user_facing=False,
            template_params=self.class_template_params(cursor), bases=tuple(bases),
            constructors=tuple(ctors), methods=tuple(methods),
            temp_storage=temp_storage,
            brief=(cursor.brief_comment or "").strip(), file=self.rel(cursor),
            line=cursor.location.line, unstable=self.unstable(name, ns))

    def function_model(self, qualname: str, found: list) -> FunctionModel:
        """One function's overloads in declaration order; a signature declared again (a
        forward declaration and its definition, macro-made specializations) counts once."""
        overloads: dict[str, Overload] = {}
        for cursor, _ in found:
            ov = self.overload(cursor, "function", "", None)
            if ov.signature in overloads:
                # the documented declaration wins over a hidden redeclaration
                if overloads[ov.signature].hidden and not ov.hidden:
                    overloads[ov.signature] = ov
                continue
            overloads[ov.signature] = ov
        first, ns = found[0]
        family = self.family(first)
        scope = family if family != "util" else ("warp" if WARP_UTIL.match(first.spelling)
                                                 else "thread")
        ovs = tuple(overloads.values())
        public = [o for o in ovs if not o.hidden] or list(ovs)
        return FunctionModel(name=first.spelling, qualname=qualname, scope=scope, family=family,
                             overloads=ovs, brief=public[0].brief, file=self.rel(first),
                             line=first.location.line, unstable=self.unstable(first.spelling, ns))

    def enum_model(self, qualname: str, cursor) -> Enum:
        values = tuple(EnumValue(name=v.spelling, value=v.enum_value,
                                 brief=(v.brief_comment or "").strip())
                       for v in cursor.get_children() if v.kind == self.K.ENUM_CONSTANT_DECL)
        return Enum(name=cursor.spelling, qualname=qualname, values=values, file=self.rel(cursor),
                    line=cursor.location.line)


@dataclass(frozen=True)
class Unit:
    """libclang's translation unit of a release's headers: what :func:`translation_unit`
    makes (libclang alone, no GIL held) and :func:`model_of` walks (Python)."""
    include_root: Path
    headers: tuple[str, ...]
    tu: object


#: CXTranslationUnit_IgnoreNonErrorsFromIncludedFiles (cindex names no constant for it): libclang
#: keeps no warning or note of the headers (every one is included), only their errors.
_IGNORE_NON_ERRORS = 0x4000


def translation_unit(include_root: Path) -> Unit:
    """Parse all public block/warp headers (and the thread-level ones) in one translation unit.
    Safe on several threads at once: libclang holds no GIL while it parses."""
    ci = _clang()
    headers = public_headers(include_root)
    if not headers:
        raise FileNotFoundError(f"no {' or '.join(HEADER_GLOBS)} under {include_root}")
    for pattern in FUNCTION_GLOBS:
        headers += sorted(p.relative_to(include_root).as_posix()
                          for p in include_root.glob(pattern))
    source = "".join(f"#include <{h}>\n" for h in headers)
    args = clang_args(include_root)
    pch = _preamble_for(include_root)
    tu = ci.Index.create().parse(
        "coopgen_all_headers.cu", args=args + (["-include-pch", pch] if pch else []),
        unsaved_files=[("coopgen_all_headers.cu", source)],
        options=ci.TranslationUnit.PARSE_SKIP_FUNCTION_BODIES | _IGNORE_NON_ERRORS)
    return Unit(include_root, tuple(headers), tu)


def model_of(unit: Unit, *, cccl: str, headers_digest: str,
             detail_classes: frozenset = frozenset()) -> ApiModel:
    """The ApiModel of a parse, with the class templates of cub::detail named in
    ``detail_classes`` (bound as unstable)."""
    ci = _clang()
    walker = _Walker(ci, unit.include_root, detail_classes)
    diagnostics = []
    for d in unit.tu.diagnostics:
        if d.severity >= ci.Diagnostic.Error:
            loc = d.location
            diagnostics.append(Diagnostic(
                severity="fatal" if d.severity == ci.Diagnostic.Fatal else "error",
                file=walker.rel_path(loc.file.name) if loc.file else "", line=loc.line,
                message=d.spelling))
    walker.walk(unit.tu.cursor, ())
    classes = tuple(walker.class_model(q, c, ns) for q, (c, ns) in walker.classes.items())
    enums = tuple(walker.enum_model(q, c) for q, c in walker.enums.items())
    functions = tuple(walker.function_model(q, found) for q, found in walker.functions.items())
    return ApiModel(schema=MODEL_SCHEMA, cccl=cccl, headers_digest=headers_digest,
                    headers=unit.headers, classes=classes, enums=enums,
                    diagnostics=tuple(diagnostics), functions=functions)


def parse(include_root: Path, *, cccl: str, headers_digest: str,
          detail_classes: frozenset = frozenset()) -> ApiModel:
    """Parse all public block/warp headers in one translation unit into an ApiModel, with the
    class templates of cub::detail named in ``detail_classes`` (bound as unstable)."""
    return model_of(translation_unit(include_root), cccl=cccl, headers_digest=headers_digest,
                    detail_classes=detail_classes)
