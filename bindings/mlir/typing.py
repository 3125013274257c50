"""numba-cuda-mlir typing and MLIR lowering of primitive calls: argument types described,
resolved to a plan, written as a shim that joins the function's bundle, lowered to a
``func.call`` of the shim's C symbol with the arrays' data pointers."""
import collections
import contextlib
import inspect

import numba_cuda_mlir._mlir.ir as ir
import numpy as np
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir._mlir.dialects import arith, func, llvm, memref
from numba_cuda_mlir._mlir.extras import types as T
from numba_cuda_mlir.lowering_utilities import GEP_DYNAMIC_INDEX, memref_data_pointer
from numba_cuda_mlir.mlir_lowering import get_or_insert_function
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.typing.templates import AbstractTemplate, signature

from ..codegen import shims
from ..codegen.shims import PARENT_ALIGN, PARENT_BYTES
from ..codegen.layout import check_storage_fits
from ..model.errors import CoopgenError
from ..resolve import call as calls
from ..resolve import hooks
from ..resolve.entry import ObjectKind
from ..resolve.operators import operator_signatures
from ..types import desc
from ..types.cpp import by_pointer
from .arrays import ParentType, TempStorageType
from .bundle import bundle_for, launch_dims
from .describe import constant_type, describe, dtype_of, to_numba
from .operators import bit_field_digits, compile_operator

#: "Class::Signature" of recent resolutions, so tests can see which overload a call chose.
RESOLVED = collections.deque(maxlen=10000)
HOOKS = hooks.Hooks(lambda value: describe(constant_type(value)), bit_field_digits, launch_dims)
hooks.installed.append(HOOKS)


class CoopgenTypeError(TypingError, CoopgenError):
    """A call to a coopgen primitive that cannot be compiled as written."""


@contextlib.contextmanager
def _serving():
    """coopgen's own errors as numba-cuda-mlir's typing errors, with this backend's hooks."""
    try:
        with hooks.serving(HOOKS):
            yield
    except CoopgenTypeError:
        raise
    except CoopgenError as e:
        raise CoopgenTypeError(str(e)) from None


def _described(args, kws):
    return tuple(describe(a) for a in args), {k: describe(v) for k, v in kws.items()}


def _resolve_once(p, args, kws):
    """(plan, the arguments an object factory keeps as (name, type, argument index))."""
    with _serving():
        described = _described(args, kws)
        r, bound = calls.resolve_object(p, *described) if p.infer else \
            (calls.resolve_call(p, *described), ())
        if r.temp_storage_arg is not None:
            check_storage_fits(p.name, r)
        return r, bound


def resolve(p, args: tuple, kws: dict):
    """(plan, kept arguments, positional types, keyword types): cuda.coop's two-phase objects
    take their storage first, ``obj(ts, src, dst)``, which is then the keyword temp_storage."""
    try:
        return (*_resolve_once(p, args, kws), args, kws)
    except CoopgenTypeError:
        ts = args[0] if args else None
        storage_first = isinstance(ts, TempStorageType) or isinstance(
            ts, types.Array) and ts.ndim == 1 and ts.dtype == types.uint8
        if not storage_first or not p.fixed or "temp_storage" in kws or p.constructor \
                or p.parent is not None:
            raise
        moved = {"temp_storage": ts, **kws}
        return (*_resolve_once(p, args[1:], moved), args[1:], moved)


def call_type(p, args: tuple, kws: dict):
    """The return type of a call of ``p`` (a constructor returns the object first)."""
    r, bound, pos, kw = resolve(p, tuple(args), dict(kws))
    RESOLVED.append(f"{r.cls.name}::{r.method.signature}")
    outs = [to_numba(t) for _, t, _ in r.returns]
    if p.constructor:
        with _serving():
            tkws = tuple(calls.split_call(p, *_described(pos, kw)).tkws.items())
        folded = (*pos, *kw.values())
        outs.insert(0, ParentType(ObjectKind.of(p, r, tkws),
                                  tuple((n, folded[i]) for n, _, i in bound)))
    return types.none if not outs else outs[0] if len(outs) == 1 else types.Tuple(outs)


def folded_signature(ret, args, kws, recvr=None):
    """The signature of a call with its keywords folded after the positionals."""
    names = [f"coopgen_pos_{i}" for i in range(len(args))] + list(kws)
    pysig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                               for n in names])
    return signature(ret, *args, *kws.values(), recvr=recvr).replace(pysig=pysig)


def make_template(p):
    class CoopgenCall(AbstractTemplate):
        key = p
        prefer_literal = True

        def generic(self, args, kws):
            return folded_signature(call_type(p, args, kws), args, kws)

    CoopgenCall.__name__ = f"CoopgenCall_{p.name.replace('.', '_')}"
    return CoopgenCall


FUNCTION_TYPES: dict = {}


def register(p) -> None:
    """Give entry point ``p`` numba-cuda-mlir typing and lowering."""
    FUNCTION_TYPES[id(p)] = types.Function(make_template(p))
    ext.lower_builtin(p, types.VarArg(types.Any))(
        lambda builder, target, args, kws: lower_call(p, builder, target, args, kws))


def _constant(builder, value):
    """(type, MLIR value) of an argument the call passes by itself (None: no run-time value)."""
    ty = types.unliteral(constant_type(value))
    if isinstance(ty, (types.Integer, types.Float, types.Boolean)):
        mtype = builder.get_value_type(ty)
        if isinstance(ty, types.Float):
            attr = ir.FloatAttr.get(mtype, float(np.asarray(value)))
        else:  # MLIR takes the bits as signed: 2**64 - 1 (an identity of &) is -1
            bits = ir.IntegerType(mtype).width
            attr = ir.IntegerAttr.get(mtype, (int(value) + (1 << bits - 1)) % (1 << bits)
                                      - (1 << bits - 1))
        return ty, arith.constant(result=mtype, value=attr)
    return ty, None


def _slot(builder, ty):
    """(pointer, one-item memref or None) where a value passed or returned by pointer lives: a
    record's value is a pointer to its bytes, so the slot holds the bytes; a complex value has
    no LLVM type in MLIR, so it goes through a memref."""
    if isinstance(ty, types.Record):
        size = arith.constant(result=T.i32(), value=ty.size)
        return llvm.alloca(res=llvm.PointerType.get(), array_size=size, elem_type=T.i8(),
                           alignment=ty.dtype.alignment), None
    storage = builder.get_storage_type(ty)
    if not isinstance(storage, ir.ComplexType):
        one = arith.constant(result=T.i32(), value=1)
        return llvm.alloca(res=llvm.PointerType.get(), array_size=one, elem_type=storage), None
    m = memref.alloca(ir.MemRefType.get([1], storage), [], [])
    return memref_data_pointer(m), m


def _store(builder, ty, value, slot) -> None:
    ptr, m = slot
    if m is None:
        llvm.store(builder.as_storage(ty, value), ptr)
    else:
        memref.store(builder.as_storage(ty, value), m, [arith.constant(T.index(), 0)])


def _load(builder, ty, slot):
    ptr, m = slot
    if isinstance(ty, types.Record):
        return ptr
    return builder.from_storage(ty, llvm.load(res=builder.get_storage_type(ty), addr=ptr)
                                if m is None else memref.load(m, [arith.constant(T.index(), 0)]))


def _pass(builder, ty, value, target):
    """An argument as the shim takes it: data pointers for arrays, a copy's address for
    structs and by-pointer types, bytes for booleans, numbers cast to the bound C type."""
    if isinstance(ty, types.Array):
        return _data_pointer(value, ty)
    if isinstance(ty, types.Record):  # a record value is a pointer to its data
        return value
    if target is not None and ty != target:
        value = builder.lower_cast(ty, target, value)
        ty = target
    if by_pointer(dtype_of(ty)):
        slot = _slot(builder, ty)
        _store(builder, ty, value, slot)
        return slot[0]
    if isinstance(types.unliteral(ty), types.Boolean):
        return arith.extui(T.i8(), value)
    return value


def _data_pointer(value, ty: types.Array):
    """An array's data pointer. numba-cuda-mlir 0.6.0 keeps record arrays as byte memrefs whose
    offset counts records (a slice's start), but adds it as bytes (its own ``a[5:][0]`` reads 5
    bytes past ``a[0]``): coopgen steps over whole records."""
    ptr = memref_data_pointer(value)
    if not isinstance(ty.dtype, types.Record) or ty.dtype.size == 1:
        return ptr
    records = arith.index_cast(T.i64(), memref.extract_strided_metadata(value)[1])
    extra = arith.muli(records, arith.constant(T.i64(), ty.dtype.size - 1))
    return llvm.getelementptr(ptr.type, ptr, [extra], [GEP_DYNAMIC_INDEX], T.i8(), None)


#: Arguments with no run-time value: compile-time constants, dtypes, operators, storage objects.
_NO_VALUE = (TempStorageType, types.Literal, types.Function, types.DType, types.NumberClass,
             types.Omitted, types.NoneType, types.Dispatcher)
_NUMBER_LITERAL = (types.IntegerLiteral, types.BooleanLiteral)


def _arguments(builder, pos, kws, variables) -> list:
    """(type, MLIR value) of the call's own arguments (positionals, keywords); a literal number
    (a method's ``rld.RunLengthDecode(out, 0)``, typed as literals) as its constant."""
    return [_constant(builder, t.literal_value) if isinstance(t, _NUMBER_LITERAL) else
            (t, None if isinstance(t, _NO_VALUE) else builder.load_var(v))
            for t, v in zip((*pos, *kws.values()), variables)]


def _parent_slot(builder, self_ptr=None, k: int | None = None):
    """A new object's frame slot (``self_ptr`` None), or the tail slot of its k-th kept
    argument's data pointer."""
    ptr = llvm.PointerType.get()
    if self_ptr is None:
        with builder.alloca_insertion_point():
            one = arith.constant(result=T.i32(), value=1)
            return llvm.alloca(res=ptr, array_size=one, alignment=PARENT_ALIGN,
                               elem_type=ir.Type.parse(f"!llvm.array<{PARENT_BYTES} x i8>"))
    return llvm.getelementptr(ptr, self_ptr, [], [PARENT_BYTES - 8 * (k + 1)], T.i8(), None)


def _shim(p, builder, r, n_bound: int):
    """Write the call's shim, add it to the function's bundle and link its operators."""
    with _serving():
        bundle = bundle_for(builder, p.name)
        ts = r.temp_storage_arg[1] if r.temp_storage_arg else None
        use_index = bundle.next_use_index(ts.symbol) if isinstance(ts, desc.Storage) else 0
        mode = "construct" if p.constructor else "method" if p.parent is not None else None
        text = shims.build(r, operator_signatures(p.name, r), object_mode=mode,
                           object_bytes=PARENT_BYTES - 8 * n_bound, use_index=use_index)
        bundle.add(text)
        for i, sym, argtypes, restype in text.op_symbols:
            compile_operator(builder, sym, r.bindings[i].operator, argtypes, restype, p.name)
    return text


def _check_device_function(p, builder, r, kws) -> None:
    """A device function numba-cuda-mlir did not inline is compiled once for every launch,
    whatever its block shape: its calls must say threads_per_block=."""
    given = "threads_per_block" in kws or "threads_per_block" in p.fixed or p.parent
    if not builder._is_kernel and r.block_dims is not None and not given:
        raise CoopgenTypeError(
            f"{p.name}: called in the device function {builder.fndesc.qualname!r} without "
            f"threads_per_block=: a device function is compiled once and not re-specialised "
            f"for each launch's block shape. Pass threads_per_block=, or declare it "
            f"@cuda.jit(device=True, inline='always')")


def lower_call(p, builder, target, args, kws, self_ptr=None, kept=None):
    """Emit the call of ``p``'s shim (the lowering of every entry point). ``kept``: {name:
    (type, data pointer)} of the arguments an object keeps, passed after the call's own."""
    kept = kept or {}
    argtys = tuple(builder.get_numba_type(a) for a in args)
    kwtys = {k: builder.get_numba_type(v) for k, v in kws}
    r, bound, pos, kwd = resolve(p, argtys, dict(kwtys, **{k: t for k, (t, _) in kept.items()}))
    variables = list(args) + [v for _, v in kws]
    if len(pos) < len(argtys):  # the storage passed first is the keyword temp_storage
        variables = variables[1:len(args)] + variables[:1] + variables[len(args):]
    _check_device_function(p, builder, r, kwtys)
    text = _shim(p, builder, r, len(bound))
    user = {k: t for k, t in kwd.items() if k not in kept}
    passed = _arguments(builder, pos, user, variables) + [("kept", v) for _, v in kept.values()]
    if p.parent is None and not p.infer:
        with _serving():
            constants = calls.split_call(p, *_described(pos, user)).constants
        passed += [_constant(builder, v) for _, v in constants]
    if p.constructor:
        self_ptr = _parent_slot(builder)
    targets = {b.arg_index: to_numba(b.type) for b in r.bindings
               if b.source == "arg" and isinstance(b.type, desc.Scalar)}
    operands, slots = [], []
    for _, _, source, index in text.c_params:
        if source == "self":
            operands.append(self_ptr)
        elif source == "ret":
            ty = to_numba(r.returns[index][1])
            slots.append((_slot(builder, ty), ty))
            operands.append(slots[-1][0][0])
        elif source == "state":  # (function, state array), or the state array itself
            ty, value = passed[index]
            if isinstance(ty, types.BaseTuple):
                ty, value = ty[1], value[1]
            operands.append(_pass(builder, ty, value, None))
        elif passed[index][0] == "kept":  # already a data pointer
            operands.append(passed[index][1])
        else:
            operands.append(_pass(builder, *passed[index], targets.get(index)))
    fnty = ir.FunctionType.get(inputs=[o.type for o in operands], results=[])
    callee = get_or_insert_function(text.symbol, fnty, builder.mlir_gpu_module)
    func.call(result=[], callee=callee.name.value, operands_=operands)
    values = [_load(builder, ty, s) for s, ty in slots]
    if p.constructor:  # the data pointers of the arrays it keeps go to the slot's tail
        for k, (_, _, index) in enumerate(bound):
            llvm.store(_pass(builder, *passed[index], None), _parent_slot(builder, self_ptr, k))
        values.insert(0, self_ptr)
    if values:
        builder.store_var(target, values[0] if len(values) == 1 else tuple(values))
