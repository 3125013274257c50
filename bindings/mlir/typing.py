"""numba-cuda-mlir typing and MLIR lowering of primitive calls: argument types described,
resolved to a plan, written as a shim that joins the function's bundle, lowered to a
``func.call`` of the shim's C symbol with the arrays' data pointers."""
import collections
import contextlib
import inspect

import numba_cuda_mlir._mlir.ir as ir
import numpy as np
from numba_cuda_mlir import extending as ext
from numba_cuda_mlir._mlir.dialects import arith, func, llvm
from numba_cuda_mlir._mlir.extras import types as T
from numba_cuda_mlir.lowering_utilities import memref_data_pointer
from numba_cuda_mlir.mlir_lowering import get_or_insert_function
from numba_cuda_mlir.numba_cuda import types
from numba_cuda_mlir.numba_cuda.core.errors import TypingError
from numba_cuda_mlir.numba_cuda.typing.templates import AbstractTemplate, signature

from ..codegen import shims
from ..codegen.layout import check_storage_fits
from ..model.errors import CoopgenError
from ..resolve import call as calls
from ..resolve import hooks
from ..resolve.operators import operator_signatures
from ..types import desc
from ..types.cpp import by_pointer
from .arrays import TempStorageType
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
    with _serving():
        r = calls.resolve_call(p, *_described(args, kws))
        if r.temp_storage_arg is not None:
            check_storage_fits(p.name, r)
        return r


def resolve(p, args: tuple, kws: dict):
    """(plan, positional types, keyword types): cuda.coop's two-phase objects take their storage
    first, ``obj(ts, src, dst)``, which is then the keyword temp_storage."""
    try:
        return _resolve_once(p, args, kws), args, kws
    except CoopgenTypeError:
        ts = args[0] if args else None
        storage_first = isinstance(ts, TempStorageType) or isinstance(
            ts, types.Array) and ts.ndim == 1 and ts.dtype == types.uint8
        if not storage_first or not p.fixed or "temp_storage" in kws:
            raise
        moved = {"temp_storage": ts, **kws}
        return _resolve_once(p, args[1:], moved), args[1:], moved


def _check_supported(p) -> None:
    if p.constructor or p.parent is not None or p.infer:
        raise CoopgenTypeError(f"{p.name}: CUB objects constructed in kernels are not supported "
                               f"by the numba-cuda-mlir backend yet (docs/numba-cuda-mlir.md)")


def make_template(p):
    class CoopgenCall(AbstractTemplate):
        key = p
        prefer_literal = True

        def generic(self, args, kws):
            _check_supported(p)
            r, pos, kw = resolve(p, tuple(args), dict(kws))
            RESOLVED.append(f"{r.cls.name}::{r.method.signature}")
            outs = [to_numba(t) for _, t, _ in r.returns]
            ret = types.none if not outs else outs[0] if len(outs) == 1 else types.Tuple(outs)
            names = [f"coopgen_pos_{i}" for i in range(len(args))] + list(kws)
            pysig = inspect.Signature([inspect.Parameter(
                n, inspect.Parameter.POSITIONAL_OR_KEYWORD) for n in names])
            return signature(ret, *args, *kws.values()).replace(pysig=pysig)

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
        attr = ir.IntegerAttr.get(mtype, int(value)) if not isinstance(ty, types.Float) \
            else ir.FloatAttr.get(mtype, float(np.asarray(value)))
        return ty, arith.constant(result=mtype, value=attr)
    return ty, None


def _alloca(builder, ty):
    one = arith.constant(result=T.i32(), value=1)
    return llvm.alloca(res=llvm.PointerType.get(), array_size=one,
                       elem_type=builder.get_storage_type(ty))


def _pass(builder, ty, value, target):
    """An argument as the shim takes it: data pointers for arrays, a copy's address for
    structs and by-pointer types, bytes for booleans, numbers cast to the bound C type."""
    if isinstance(ty, types.Array):
        return memref_data_pointer(value)
    if isinstance(ty, types.Record):
        raise CoopgenTypeError("a record passed by value is not supported by the "
                               "numba-cuda-mlir backend yet (docs/numba-cuda-mlir.md)")
    if target is not None and ty != target:
        value = builder.lower_cast(ty, target, value)
        ty = target
    if by_pointer(dtype_of(ty)):
        slot = _alloca(builder, ty)
        llvm.store(builder.as_storage(ty, value), slot)
        return slot
    if isinstance(types.unliteral(ty), types.Boolean):
        return arith.extui(T.i8(), value)
    return value


#: Arguments with no run-time value: compile-time constants, dtypes, operators, storage objects.
_NO_VALUE = (TempStorageType, types.Literal, types.Function, types.DType, types.NumberClass,
             types.Omitted, types.NoneType, types.Dispatcher)


def _arguments(builder, p, pos, kws, variables):
    """(type, MLIR value) of each argument the shim's parameters index: the call's own
    (positionals, keywords), then the constants it passes by itself."""
    passed = [(t, None if isinstance(t, _NO_VALUE) else builder.load_var(v))
              for t, v in zip((*pos, *kws.values()), variables)]
    with _serving():
        constants = calls.split_call(p, *_described(pos, kws)).constants
    return passed + [_constant(builder, v) for _, v in constants]


def lower_call(p, builder, target, args, kws):
    """Emit the call of ``p``'s shim (the lowering of every entry point)."""
    argtys = tuple(builder.get_numba_type(a) for a in args)
    kwtys = {k: builder.get_numba_type(v) for k, v in kws}
    r, pos, kwd = resolve(p, argtys, kwtys)
    variables = list(args) + [v for _, v in kws]
    if len(pos) < len(argtys):  # the storage passed first is the keyword temp_storage
        variables = variables[1:len(args)] + variables[:1] + variables[len(args):]
    with _serving():
        bundle = bundle_for(builder, p.name)
        ts = r.temp_storage_arg[1] if r.temp_storage_arg else None
        use_index = bundle.next_use_index(ts.symbol) if isinstance(ts, desc.Storage) else 0
        text = shims.build(r, operator_signatures(p.name, r), use_index=use_index)
        bundle.add(text)
        for i, sym, argtypes, restype in text.op_symbols:
            compile_operator(builder, sym, r.bindings[i].operator, argtypes, restype, p.name)
    passed = _arguments(builder, p, pos, kwd, variables)
    targets = {b.arg_index: to_numba(b.type) for b in r.bindings
               if b.source == "arg" and isinstance(b.type, desc.Scalar)}
    operands, slots = [], []
    for _, _, source, index in text.c_params:
        if source == "ret":
            ty = to_numba(r.returns[index][1])
            slots.append((_alloca(builder, ty), ty))
            operands.append(slots[-1][0])
        elif source == "state":
            raise CoopgenTypeError(f"{p.name}: stateful operators are not supported by the "
                                   f"numba-cuda-mlir backend yet (docs/numba-cuda-mlir.md)")
        else:
            operands.append(_pass(builder, *passed[index], targets.get(index)))
    fnty = ir.FunctionType.get(inputs=[o.type for o in operands], results=[])
    callee = get_or_insert_function(text.symbol, fnty, builder.mlir_gpu_module)
    func.call(result=[], callee=callee.name.value, operands_=operands)
    values = [builder.from_storage(ty, llvm.load(res=builder.get_storage_type(ty), addr=s))
              for s, ty in slots]
    if values:
        builder.store_var(target, values[0] if len(values) == 1 else tuple(values))
