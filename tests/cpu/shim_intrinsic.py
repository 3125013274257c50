"""Test helper: call a hand-written ``extern "C"`` shim through the shim bundle.

The runtime lowers CUB calls itself (coopgen.calls); this small intrinsic lets the compile-path
tests exercise the bundle, the NVRTC cache and the link check with shims written by hand.
"""
from __future__ import annotations

from dataclasses import dataclass

from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.core.errors import TypingError
from numba.cuda.extending import intrinsic

from coopgen.codegen.bundle import Shim
from coopgen.lower.bundle import bundle_for


@dataclass(frozen=True)
class _Param:
    kind: str  # "ptr" | "val" | "out"
    type: object = None  # numba type (dtype for ptr, may be None = any)


def ptr(dtype=None) -> _Param:
    """Array argument, passed as a pointer to its data (``T*``)."""
    return _Param("ptr", dtype)


def val(numba_type) -> _Param:
    """Scalar argument passed by value, cast to ``numba_type``."""
    return _Param("val", numba_type)


def out(numba_type) -> _Param:
    """Output scalar: C side gets ``T*`` to a local slot; the Python call
    returns the value (several outs are returned as a tuple, in order)."""
    return _Param("out", numba_type)


def _is_scalar(t) -> bool:
    # bool (i1 in numba) and float16 (LLVM half vs. the C++ __half struct) do
    # not match a C parameter type one-to-one, so they are left out.
    return isinstance(t, types.Integer) or (
        isinstance(t, types.Float) and t.bitwidth in (32, 64)
    )


def _check_scalar(t, where):
    if not _is_scalar(t):
        raise TypeError(
            f"{where}: only int8..int64/uint8..uint64/float32/float64 scalars "
            f"are supported, got {t} (pass booleans as uint8)"
        )


def shim_call(shim: Shim, params, name: str | None = None):
    """Build an intrinsic calling ``shim.symbol`` with the C signature ``params``.

    The returned intrinsic takes one argument per ``ptr``/``val`` param (in
    order) and returns ``None``, the single ``out`` value, or a tuple of outs.
    The C function must return ``void``.
    """
    params = tuple(params)
    for p in params:
        if p.kind in ("val", "out"):
            _check_scalar(p.type, shim.symbol)
    inputs = [p for p in params if p.kind != "out"]
    outs = [p.type for p in params if p.kind == "out"]
    if not outs:
        restype = types.none
    elif len(outs) == 1:
        restype = outs[0]
    else:
        restype = types.Tuple(outs)

    def codegen(context, builder, sig, args):
        bundle_for(context.active_code_library).add(shim)

        llargs, slots, it = [], [], iter(zip(args, sig.args))
        for p in params:
            if p.kind == "out":
                slot = cgutils.alloca_once(builder, context.get_value_type(p.type))
                slots.append(slot)
                llargs.append(slot)
                continue
            v, ty = next(it)
            if p.kind == "ptr":
                if isinstance(ty, types.Array):
                    v = context.make_array(ty)(context, builder, v).data
                llargs.append(v)  # CPointer: already a pointer value
            else:
                llargs.append(context.cast(builder, v, ty, p.type))

        fnty = ir.FunctionType(ir.VoidType(), [a.type for a in llargs])
        fn = cgutils.get_or_insert_function(builder.module, fnty, shim.symbol)
        builder.call(fn, llargs)

        if not slots:
            return context.get_dummy_value()
        vals = [builder.load(s) for s in slots]
        if len(vals) == 1:
            return vals[0]
        return context.make_tuple(builder, sig.return_type, vals)

    def typer(typingctx, argtys):
        if len(argtys) != len(inputs):
            raise TypingError(
                f"{shim.symbol} takes {len(inputs)} arguments, got {len(argtys)}"
            )
        for p, t in zip(inputs, argtys):
            if p.kind == "ptr":
                # only the data pointer is passed, so strides would be lost
                if not (
                    isinstance(t, types.CPointer)
                    or (isinstance(t, types.Array) and t.layout == "C")
                ):
                    raise TypingError(
                        f"{shim.symbol}: expected a C-contiguous array, got {t}"
                    )
                if p.type is not None and t.dtype != p.type:
                    raise TypingError(
                        f"{shim.symbol}: expected {p.type} data, got {t.dtype}"
                    )
            elif not _is_scalar(t):
                raise TypingError(f"{shim.symbol}: expected a scalar, got {t}")
        return restype(*argtys), codegen

    return _make_intrinsic(name or shim.symbol, len(inputs), typer)


def _make_intrinsic(name: str, nargs: int, typer):
    # numba derives the Python-level signature of an intrinsic from its
    # definition function, and an intrinsic defined with *args types fine but
    # fails to lower (numba-cuda 0.30.4), so build a definition with exactly
    # `nargs` named parameters.
    names = [f"a{i}" for i in range(nargs)]
    src = (
        f"def {name}(typingctx, {', '.join(names)}):\n"
        f"    return typer(typingctx, ({''.join(n + ', ' for n in names)}))\n"
    )
    ns = {"typer": typer}
    exec(compile(src, f"<coopgen shim_call {name}>", "exec"), ns)
    return intrinsic(ns[name])
