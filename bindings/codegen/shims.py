"""C++ shim text for one resolved call: a config struct ``cub::coopgen_cfg_<h>`` naming the
template arguments as CUB does (so header defaults that use them compile) and the class as
``prim``, the operator functors, and ``COOPGEN_SHIM void coopgen_<Class>_<Method>_<h>(...)``,
which makes a ``prim`` on its temp storage and calls the method. Names derive from a hash of
what the shim is, never a counter; implicit temp storage is the bundle's (_implicit_storage)."""
import hashlib
import itertools
from dataclasses import dataclass, field

from ..resolve.operators import decomposer_fields, key_record
from ..resolve.plan import RANGE_ROLES, Plan
from ..types.cpp import CPP_OF, by_pointer, is_struct, struct_decl, struct_name
from ..types.desc import VOID, Array, Pointer, Storage, item_type, unliteral

#: Alignment of coopgen's shared arrays (coopgen.shared.array), enough for any TempStorage.
SHARED_ALIGNMENT = 16

#: The built-in functors (::cuda::std::less, ::cuda::minimum, ...); newer CUB headers no
#: longer include them for us.
OPERATOR_HEADERS = ("cuda/functional", "cuda/std/functional")
# Members of the translation unit's storage struct (shimcall, shared_placement).
STORAGE = "coopgen_storage()"
BLOCK_MEMBER, WARP_MEMBER = "coopgen_block_storage", "coopgen_warp_storage"
LINEAR_TID = "(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z))"

#: Bytes reserved for a parent object (a CUB object constructed in a kernel) in the constructing
#: thread's frame, the data pointers of the arrays it keeps at its tail; the constructor shim
#: static_asserts that the CUB class fits.
PARENT_BYTES, PARENT_ALIGN = 256, 16

@dataclass(frozen=True)
class Shim:
    """One ``extern "C"`` device function: its definition (``COOPGEN_SHIM void <symbol>(...)``,
    a symbol unique per definition), the headers it includes and what the bundle adds for it."""
    symbol: str
    source: str
    includes: tuple = ()
    decls: str = ""  # namespace-scope declarations: config structs, operator functors
    block_storage: str | None = None  # its TempStorage type in the implicit block storage union
    temp_storage: tuple | None = None  # a coopgen.TempStorage use: (object, C++ type, member)
    #: (TempStorage type, logical warps, logical warp threads): a slice per logical warp in
    #: the warp-storage union of that logical warp size.
    warp_storage: tuple | None = None
    #: (bytes, alignment) of a large coopgen.shared.array whose address the shim returns: a
    #: member of the storage struct named by the symbol (arrays.STORAGE_ARRAY_BYTES).
    shared_array: tuple | None = None
    # For the caller, so not compared (calls of one shim may order their arguments otherwise):
    # (C type, name, source, index) in call order; source "arg": the call's argument ``index``
    # (its data pointer for arrays), "state": the state array of the operator argument
    # ``index``, "ret": returned value ``index``, "self": the object's buffer.
    c_params: tuple = field(default=(), compare=False)
    # (binding index, symbol, argtypes, restype) of each operator to compile
    op_symbols: tuple = field(default=(), compare=False)


def _h(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:12]


def _once(name: str, text: str) -> str:
    """``text`` guarded so that several shims of one translation unit may each bring it."""
    return f"#ifndef COOPGEN_DEFINED_{name}\n#define COOPGEN_DEFINED_{name}\n{text}\n#endif"


def cfg_struct(name: str, cls, template_args) -> str:
    """``cub::<name>``: the template arguments named as CUB names them, and ``prim``."""
    lines = [f"namespace cub {{ struct {name} {{"]
    lines += [f"  using {t.name} = {value};" if t.kind == "type" else
              f"  static constexpr {t.cpp_type} {t.name} = {value};" for t, value in template_args]
    args = ", ".join(t.name for t, _ in template_args)
    if not cls.function:  # a free function is called by its name (_body)
        lines.append(f"  using prim = {cls.cpp.removeprefix('cub::')}<{args}>;")  # detail::
    lines.append("}; }")
    return _once(name, "\n".join(lines))


def _op_functor(name: str, sym: str, op, argtypes, restype) -> str:
    """A functor of the shape CUB expects, calling the numba-compiled ``sym`` (C ABI: numbers
    by value, records and state by pointer; a record result comes back through an output
    pointer, the last parameter, or the first where all are record pointers but a callback's)."""
    def ctype(t):
        t = unliteral(t)
        return struct_name(t) if is_struct(t) else CPP_OF.get(getattr(t, "name", None), "void*")

    state = ["state"] if op.state is not None else []
    operands = list(argtypes[len(state):])
    if restype != VOID:  # records by pointer (a comparison of user-defined types): the same
        operands = [t.to if isinstance(t, Pointer) and is_struct(t.to) else t for t in operands]
    result, out_first = None, False
    if operands and all(isinstance(t, Pointer) and is_struct(t.to) for t in operands):
        # op(out, a, b) on pointers (cuda.coop's user-defined types); callback(aggregate, out)
        out_first = op.kind != "BlockPrefixCallbackOp"
        result, operands = operands.pop(0 if out_first else -1).to, [t.to for t in operands]
    elif restype == VOID and operands and is_struct(operands[-1]) \
            and op.kind != "CountsCallback":
        result = operands.pop()
    elif restype != VOID and by_pointer(restype):  # half, complex, vector: through a pointer
        result, restype = restype, VOID
    ret = "void" if restype == VOID else ctype(restype)
    out = ["(void*)&r"] if result is not None else []
    abi = [("void*" if by_pointer(t) else ctype(t)) for t in operands]
    decl_args = ["void*"] * len(state + out) + abi if out_first else \
        ["void*"] * len(state) + abi + ["void*"] * len(out)
    params = ", ".join(f"const {ctype(t)}& a{i}" for i, t in enumerate(operands))
    args = [f"(void*)&a{i}" if by_pointer(t) else f"a{i}" for i, t in enumerate(operands)]
    call = f"{sym}({', '.join(state + (out + args if out_first else args + out))})"
    shaped = op.kind in ("DigitExtractorT", "CountsCallback")  # a method CUB names, not a result
    if result is not None and (out_first or not shaped):
        rt = ctype(result)
        body = f"  __device__ {rt} operator()({params}) const {{ {rt} r; {call}; return r; }}\n"
    elif op.kind == "DigitExtractorT":
        body = (f"  __device__ {ret} Digit({params}) const "
                f"{{ return {sym}({', '.join(state + args)}); }}\n")
    elif op.kind == "CountsCallback":
        body = (f"  template <int N> __device__ void operator()(int (&bins)[N]) const "
                f"{{ {sym}({'state, ' if state else ''}bins); }}\n")
    else:
        body = f"  __device__ {ret} operator()({params}) const {{ return {call}; }}\n"
    member = "  void* state;\n" if state else ""
    decl = f'extern "C" __device__ {ret} {sym}({", ".join(decl_args)});'
    return _once(name, f"{decl}\nstruct {name} {{\n{member}{body}}};")


def _logical_warps(r: Plan) -> tuple[int, str, str]:
    """(logical warps per block, the calling thread's logical warp index, logical warp
    threads). CUB forms logical warps inside each hardware warp (lane / size), so a size that
    does not divide 32 leaves a partial logical warp at the end of every hardware warp; for
    sizes that divide 32 the index is the linear thread index / size."""
    lwt = dict((t.keyword, v) for t, v in r.template_args).get("logical_warp_threads", "32")
    threads = r.block_dims[0] * r.block_dims[1] * r.block_dims[2] if r.block_dims else 1024
    per_hw_warp = -(-32 // int(lwt))
    warps = max(1, -(-threads // 32) * per_hw_warp)
    if 32 % int(lwt) == 0:
        return warps, f"{LINEAR_TID} / {lwt}", lwt
    return warps, f"({LINEAR_TID} / 32 * {per_hw_warp} + {LINEAR_TID} % 32 / {lwt})", lwt


@dataclass
class _Parts:  # what writing one shim collects
    r: Plan
    h: str
    cfg: str
    prim: str
    object_mode: str | None
    c_params: list = field(default_factory=list)
    call_args: list = field(default_factory=list)
    pre: list = field(default_factory=list)
    decls: list = field(default_factory=list)
    op_syms: list = field(default_factory=list)
    ts_use: tuple | None = None
    explicit_storage: str = ""


def _shim_key(r: Plan, op_signatures, object_mode, object_bytes, use_index, ts_obj) -> str:
    """A hash of everything that makes two shims different (so of their symbol)."""
    return _h(r.cls.cpp, r.method.signature, r.template_args, r.extents, r.temp_storage,
              str(r.temp_storage_arg[1]) if r.temp_storage_arg else None,
              use_index if ts_obj is not None and ts_obj.sharing == "exclusive" else None,
              tuple((b.param.name, b.source, b.ctype, b.operator.builtin if b.operator else None,
                     b.operator.fields if b.operator else None,
                     # two functions of one body are two functors, so two shims
                     b.operator.function.identity if b.operator and b.operator.function
                     else None) for b in r.bindings),
              tuple((i, tuple(map(str, a)), str(t)) for i, (a, t) in sorted(op_signatures.items())),
              tuple(str(t) for _, t, _ in r.returns), object_mode,
              object_bytes if object_mode == "construct" else None)


def _default_argument(s: _Parts, i: int, b) -> None:
    """A parameter the call leaves out: the object's storage for a constructor, else the
    header's default where a later argument is passed."""
    r, p = s.r, b.param
    if p.role == "thread_rank":  # LoadDirectStriped's linear_tid: the calling thread's
        s.call_args.append(LINEAR_TID)
    elif p.role != "temp_storage":
        if any(x.source != "default" for x in r.bindings[i + 1:]
               if x.param.role != "temp_storage"):
            s.call_args.append(f"({p.default})")  # a later argument is passed
    elif s.object_mode == "construct" and r.temp_storage == "explicit":
        s.call_args.append(s.explicit_storage)
    elif s.object_mode == "construct":
        # No temp_storage= and no storage-free constructor: the object gets its own __shared__
        # storage (per warp for warp primitives), which it keeps for its lifetime; objects of
        # one type and call site share it.
        slots, index = (1, "0") if r.cls.scope == "block" else _logical_warps(r)[:2]
        s.pre.append(f"__shared__ typename {s.prim}::TempStorage coopgen_object_storage[{slots}];")
        s.call_args.append(f"coopgen_object_storage[{index}]")


def _operator_argument(s: _Parts, i: int, b, op_signatures) -> None:
    op, p, r = b.operator, b.param, s.r
    if op.fields:  # a decomposer: a tuple of references to the record key's fields
        fields = decomposer_fields(f"{r.cls.scope}.{r.cls.name}.{r.method.name}", r, op)
        refs = ", ".join(f"{ct}&" for ct, _ in fields)
        exprs = ", ".join(f"*reinterpret_cast<{ct}*>(reinterpret_cast<unsigned char*>(&key) + "
                          f"{offset})" for ct, offset in fields)
        fname = f"coopgen_decompose_{s.h}_{i}"
        s.decls.append(f"struct {fname} {{\n  __device__ ::cuda::std::tuple<{refs}> operator()("
                       f"{struct_name(key_record(r))}& key) const {{\n    return {{{exprs}}};"
                       f"\n  }}\n}};")
        s.call_args.append(f"{fname}{{}}")
        return
    if op.builtin is not None:
        s.call_args.append(op.builtin)
        return
    argtypes, restype = op_signatures[i]
    sym = op.symbol(argtypes)
    fname = f"{sym}_f"
    s.decls.append(_op_functor(fname, sym, op, argtypes, restype))
    s.op_syms.append((i, sym, argtypes, restype))
    if op.state is not None:
        s.c_params.append(("void*", p.name, "state", b.arg_index))
    s.pre.append(f"{fname} {p.name}_op{{{p.name if op.state is not None else ''}}};")
    s.call_args.append(f"{p.name}_op")


def _passed_argument(s: _Parts, b) -> None:
    """An argument the call passes: a C parameter, spelled for CUB (arrays as references to
    arrays of their extent, scalar outputs through their pointer)."""
    r, p = s.r, b.param
    s.c_params.append((b.ctype, p.name, "arg", b.arg_index))
    n = b.type.length if isinstance(b.type, Array) else None
    cfg, extent = f"::cub::{s.cfg}", p.extent
    if extent in {t.name for t, _ in r.template_args}:
        extent = f"{cfg}::{extent}"
    elif extent:  # a count the call fixed, or a class constant such as BINS_TRACKED_PER_THREAD
        extent = next((str(v) for name, v in r.extents if name == extent), f"{cfg}::prim::{extent}")
    if extent and n is not None and extent.endswith(f"prim::{p.extent}"):
        s.pre.append(f'static_assert({extent} == {n}, "coopgen: {r.cls.name}.{r.method.name}: '
                     f'{p.name} must have {p.extent} items, not {n}");')
    if p.role in RANGE_ROLES or extent:  # T(&)[N]: C++ deduces a range's type from it
        s.call_args.append(f"*reinterpret_cast<{b.ctype[:-1]}(*)"
                           f"[{n if p.role in RANGE_ROLES else extent}]>({p.name})")
    elif p.role in ("output_scalar", "inout_scalar") or b.ctype.endswith("*") and \
            p.role == "input_scalar":
        s.call_args.append(f"*{p.name}")
    else:
        s.call_args.append(p.name)


def _check_storage_array(s: _Parts) -> None:
    """temp_storage= a coopgen.shared.array (its size known here) must hold the TempStorage."""
    ty, ts, name = s.r.temp_storage_arg[1], f"typename {s.prim}::TempStorage", s.r.cls.name
    if isinstance(ty, Array) and ty.length is not None:
        s.pre[:0] = [f"static_assert(alignof({ts}) <= {SHARED_ALIGNMENT}, \"coopgen: {name}: "
                     f"temp_storage is misaligned: TempStorage needs more than "
                     f"{SHARED_ALIGNMENT}-byte alignment; use a coopgen.TempStorage\");",
                     f"static_assert(sizeof({ts}) <= {ty.length}, \"coopgen: {name}: temp_storage"
                     f" is too small: it needs sizeof(TempStorage) bytes\");"]


def _implicit_storage(s: _Parts, symbol: str) -> tuple[str, str | None, tuple | None]:
    """(storage expression, block storage type, warp storage) of a call without temp_storage=:
    the translation unit's block union, or its logical warp's slice."""
    r, prim = s.r, s.prim
    if r.cls.scope == "block":
        # The bundle knows every use of the storage, so it decides whether this one waits
        # (ShimBundle._storage_barriers).
        s.pre.insert(0, f"if constexpr (coopgen_barrier_{symbol}) __syncthreads();  "
                        f"// the storage may have just been used")
        return (f"reinterpret_cast<typename {prim}::TempStorage&>({STORAGE}.{BLOCK_MEMBER})",
                f"typename {prim}::TempStorage", None)
    warps, index, lwt = _logical_warps(r)
    # One slice per logical warp, shared by the warp primitives of the translation unit with
    # this logical warp size: the logical warp syncs before reusing it. Each size has its own
    # array of slices: slices of one size sit where another size's logical warps (other
    # threads, which that sync does not wait for) would have theirs.
    mask = ("0xffffffffu" if lwt == "32" else
            f"((0xffffffffu >> (32 - {lwt})) << (({LINEAR_TID} % 32) / {lwt} * {lwt}))")
    s.pre.insert(0, f"if constexpr (sizeof(typename {prim}::TempStorage) > 1) "
                    f"__syncwarp({mask});")
    return (f"reinterpret_cast<typename {prim}::TempStorage&>"
            f"({STORAGE}.{WARP_MEMBER}_{lwt}[{index}])",
            None, (f"typename {prim}::TempStorage", warps, int(lwt)))


def _body(s: _Parts, storage: str | None, object_bytes: int) -> list[str]:
    r, prim = s.r, s.prim
    obj, ctor = "coopgen_p", f"{prim} coopgen_p({storage});" if storage else f"{prim} coopgen_p;"
    if s.object_mode == "method":
        obj, ctor = "coopgen_obj", f"{prim}& coopgen_obj = *static_cast<{prim}*>(coopgen_self);"
    # the method's leading template parameters, which C++ cannot deduce from the arguments
    # (BlockRadixRankMatch::CallBack<KEYS_PER_THREAD>)
    explicit = [str(dict(r.extents)[t]) for t in itertools.takewhile(
        lambda t: not any(t in p.type for p in r.method.params), r.method.tparams)]
    method = f"template {r.method.name}<{', '.join(explicit)}>" if explicit else r.method.name
    call = f"{obj}.{method}({', '.join(s.call_args)})"
    if r.cls.function:  # no object: ::cub::ShuffleUp<32>(...)
        ctor = ""
        call = f"::{r.cls.cpp}{'<' + ', '.join(explicit) + '>' if explicit else ''}" \
               f"({', '.join(s.call_args)})"
    if s.object_mode == "construct":
        ctor = (f"static_assert(sizeof({prim}) <= {object_bytes} && alignof({prim}) <= 16, "
                f"\"coopgen: {r.cls.name} does not fit the {object_bytes}-byte object slot\");")
        call = f"::new (coopgen_self) {prim}({', '.join(s.call_args)})"
    if r.method.returns not in ("void", ""):
        call = f"*coopgen_ret_return = {call}"
    return [*s.pre, *([ctor] if ctor else []), f"{call};",
            *(f"*coopgen_ret_{what} = {what};" for what, _, _ in r.returns if what != "return")]


def build(r: Plan, op_signatures: dict[int, tuple], object_mode: str | None = None,
          object_bytes: int = 64, use_index: int = 0) -> Shim:
    """The shim for ``r``; ``op_signatures[i]``: (argtypes, restype) of operator binding i.
    ``object_mode``: None (a call on a temporary), "construct" (placement-new into the caller's
    ``coopgen_self`` buffer) or "method" (a call on that object)."""
    ts = r.temp_storage_arg[1] if r.temp_storage_arg is not None else None
    ts_obj = ts.obj if isinstance(ts, Storage) else None
    h = _shim_key(r, op_signatures, object_mode, object_bytes, use_index, ts_obj)
    symbol = f"coopgen_{r.cls.name}_{r.method.name}_{h}"
    # Named by the class and its template arguments only, so a constructor and the methods
    # called on its object agree on the type.
    cls_h = _h(r.cls.cpp, r.template_args)
    cfg = f"coopgen_cfg_{cls_h}"
    s = _Parts(r, h, cfg, f"::cub::{cfg}::prim", object_mode)
    records = [item_type(b.type) for b in r.bindings if b.type is not None]
    records += [t for _, t, _ in r.returns]
    s.decls = [struct_decl(rec) for rec in dict.fromkeys(t for t in records if is_struct(t))]
    s.decls.append(cfg_struct(cfg, r.cls, r.template_args))
    s.explicit_storage = f"*reinterpret_cast<typename {s.prim}::TempStorage*>(coopgen_temp_storage)"
    if ts_obj is not None:
        member = f"m_{cls_h}" + (f"_{use_index}" if ts_obj.sharing == "exclusive" else "")
        s.ts_use = (ts_obj, f"typename {s.prim}::TempStorage", member)
        s.explicit_storage = (f"reinterpret_cast<typename {s.prim}::TempStorage&>"
                              f"({STORAGE}.{ts_obj.symbol}.{member})")
    for i, b in enumerate(r.bindings):
        if b.source == "default":
            _default_argument(s, i, b)
        elif b.operator is not None:
            _operator_argument(s, i, b, op_signatures)
        elif b.source == "return":
            s.pre.append(f"{b.ctype} {b.param.name};")
            s.call_args.append(b.param.name)
        elif b.param.role != "temp_storage":
            _passed_argument(s, b)
    s.c_params += [(ctype + "*", f"coopgen_ret_{what}", "ret", k)
                   for k, (what, _, ctype) in enumerate(r.returns)]
    storage, block_storage, warp_storage = None, None, None
    if r.temp_storage == "explicit" and ts_obj is None:  # the storage argument
        s.c_params.insert(0, ("void*", "coopgen_temp_storage", "arg", r.temp_storage_arg[0]))
    if object_mode is not None:  # the constructor takes CUB's own storage or temp_storage=
        s.c_params.insert(0, ("void*", "coopgen_self", "self", -1))
    elif r.temp_storage == "explicit":
        storage = s.explicit_storage
        if ts_obj is None:
            _check_storage_array(s)
        elif ts_obj.auto_sync:  # the previous use of the shared storage may still read it
            s.pre.insert(0, "__syncthreads();")
    elif r.temp_storage == "implicit":
        storage, block_storage, warp_storage = _implicit_storage(s, symbol)
    params = ", ".join(f"{t} {n}" for t, n, _, _ in s.c_params) or "void"
    fn = f"COOPGEN_SHIM void {symbol}({params})\n{{\n" + "".join(
        f"  {line}\n" for line in _body(s, storage, object_bytes)) + "}"
    return Shim(symbol, fn, (r.cls.header,) + OPERATOR_HEADERS, "\n".join(s.decls),
                block_storage, s.ts_use, warp_storage, c_params=tuple(s.c_params),
                op_symbols=tuple(s.op_syms))
