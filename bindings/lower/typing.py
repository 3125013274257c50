"""numba typing and lowering of primitive calls: argument types described, resolved to a
plan, written as a shim that joins the kernel's bundle, lowered to a call of that shim; one
template class types every entry point, one lowering function emits every call. A constructed
CUB object (``block.BlockHistogram(...)``) lives in the constructing thread's frame and its value
is a pointer to it; the class in a kernel is a value whose attributes are its methods."""
import collections
import functools

import numpy as np
from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.core.imputils import lower_cast, lower_getattr_generic
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import lower_builtin, register_model
from numba.cuda.typing.templates import (AbstractTemplate, AttributeTemplate, infer_getattr,
                                         signature)

from ..codegen import shims
from ..codegen.shims import PARENT_ALIGN, PARENT_BYTES
from ..codegen.layout import check_storage_fits
from ..model.spec import ClassSpec
from ..resolve import call as calls
from ..resolve import hooks
from ..resolve.entry import ObjectKind
from ..resolve.operators import operator_signatures
from ..types import desc
from ..types.cpp import by_pointer
from .arrays import POSITIONAL, TempStorageType, positional_signature
from .bundle import (bound_kernel_threads, bundle_for, kernel_lowering_site, launch_config,
                     use_short_shared_pointers)
from .describe import constant_type, describe, dtype_of, to_numba
from .errors import CoopgenTypeError, as_typing_errors
from .host_objects import CallableObject
from .operators import bit_field_digits, compile_operator
from .shared_memory import align_numba_shared_bytes

_I8P = ir.IntType(8).as_pointer()
#: "Class::Signature" of recent resolutions, so tests can see which overload a call chose.
RESOLVED = collections.deque(maxlen=10000)


class ParentType(types.Type):
    """A constructed CUB object's numba type; the value is a pointer to it."""

    def __init__(self, ctor, resolved, template_kws: tuple, bound: tuple):
        self.kind = ObjectKind.of(ctor, resolved, template_kws)
        self.cls, self.template_kws = resolved.cls, template_kws
        self.bound = bound  # (name, type) of arguments the object keeps (object factories)
        args = ", ".join(v for _, v in resolved.template_args)
        super().__init__(f"coopgen.{self.cls.name}<{args}>"
                         + (f"[{', '.join(n for n, _ in bound)}]" if bound else ""))

    @property
    def key(self):
        return self.kind, self.bound


def bound_slot(builder, self_ptr, k: int):
    """Where the k-th kept argument's data pointer sits in the object (its tail), an i8**."""
    slot = builder.gep(self_ptr, [ir.Constant(ir.IntType(32), PARENT_BYTES - 8 * (k + 1))])
    return builder.bitcast(slot, _I8P.as_pointer())


register_model(ParentType)(OpaqueModel)


# the same object (bound-method lowering casts the receiver to itself)
lower_cast(ParentType, ParentType)(lambda context, builder, fromty, toty, val: val)


def _launch_dims(needed: bool):
    """The launching block shape (and mark the kernel as specialised on it)."""
    if (cfg := launch_config()) is None:
        return hooks.assumed_block.get()
    if needed:
        cfg.dispatcher.mark_launch_config_sensitive()
    return tuple(cfg.blockdim)


def _described(args, kws):
    return tuple(describe(a) for a in args), {k: describe(v) for k, v in kws.items()}


def _resolve(p, args: tuple, kws: dict, block_dims=None, infer: bool = True):
    """(plan, the arguments an object factory keeps) of a call of ``p``."""
    with as_typing_errors(), hooks.serving(HOOKS):
        described = _described(args, kws)
        if infer and p.infer:
            r, bound = calls.resolve_object(p, *described)
        else:
            r, bound = calls.resolve_call(p, *described, block_dims=block_dims), ()
        if r.temp_storage_arg is not None:
            check_storage_fits(p.name, r)
        return r, bound


def resolve_call(p, args: tuple, kws: dict, block_dims=None):
    return _resolve(p, args, kws, block_dims, infer=False)[0]


def split_call(p, args: tuple, kws: dict):
    with as_typing_errors(), hooks.serving(HOOKS):
        return calls.split_call(p, *_described(args, kws))


def call_type(p, args: tuple, kws: dict):
    """The return type of a call of ``p`` (it resolves the overload, or raises): a constructor
    returns the object first."""
    r, bound = _resolve(p, args, kws)
    folded = tuple(args) + tuple(kws.values())
    RESOLVED.append(f"{r.cls.name}::{r.method.signature}")
    outs = [to_numba(t) for _, t, _ in r.returns]
    if p.constructor:
        outs.insert(0, ParentType(p, r, tuple(split_call(p, args, kws).tkws.items()),
                                  tuple((n, folded[i]) for n, _, i in bound)))
    return types.none if not outs else outs[0] if len(outs) == 1 else types.Tuple(outs)


def make_template(p):
    class CoopgenCall(AbstractTemplate):
        key = p
        prefer_literal = True

        def generic(self, args, kws):
            try:
                return positional_signature(call_type(p, args, kws), args, kws)
            except CoopgenTypeError as first:
                # cuda.coop's two-phase objects take their storage first: obj(ts, src, dst),
                # a TempStorage or a uint8 array
                ts = args[0] if args else None
                storage_first = isinstance(ts, TempStorageType) or isinstance(
                    ts, types.Array) and ts.ndim == 1 and ts.dtype == types.uint8
                if not storage_first or not p.fixed or p.constructor or p.infer \
                        or p.parent is not None or "temp_storage" in kws:
                    raise
                try:
                    ret = call_type(p, args[1:], {"temp_storage": args[0], **kws})
                except CoopgenTypeError:
                    if isinstance(args[0], TempStorageType):
                        raise
                    raise first from None
                return positional_signature(ret, args, kws, lead=("temp_storage",))

    CoopgenCall.__name__ = f"CoopgenCall_{p.name.replace('.', '_')}"
    return CoopgenCall


def register(p) -> None:
    """Give entry point ``p`` numba typing and lowering (a user-reachable call)."""
    p._nbtype = types.Function(make_template(p))
    lower_builtin(p, types.VarArg(types.Any))(
        lambda context, builder, sig, args: lower_call(p, context, builder, sig, args))


def _shim_text(p, context, builder, r, n_bound, site):
    """Write the call's shim, add it to the kernel's bundle and compile its operators."""
    bundle = bundle_for(context.active_code_library, p.name, module=builder.module)
    ts = r.temp_storage_arg[1] if r.temp_storage_arg else None
    if isinstance(ts, desc.Array) and ts.space is None:
        align_numba_shared_bytes(builder.module)  # numba's cuda.shared.array(n, uint8)
    use_index = bundle.next_use_index(ts.symbol) if isinstance(ts, desc.Storage) else 0
    mode = "construct" if p.constructor else "method" if p.parent is not None else None
    text = shims.build(r, operator_signatures(p.name, r), object_mode=mode,
                       object_bytes=PARENT_BYTES - 8 * n_bound, use_index=use_index)
    bundle.add(text, site=site)
    use_short_shared_pointers(builder.module)
    bound_kernel_threads(builder, site)
    for i, sym, argtypes, restype in text.op_symbols:
        compile_operator(context, sym, r.bindings[i].operator, argtypes, restype, p.name)
    return text


def _pass(context, builder, ty, val, source, target):
    """An argument as the shim takes it: data pointers for arrays, records and structs, bytes
    for booleans, numbers converted to the bound C type."""
    if source == "state" and isinstance(ty, types.BaseTuple):  # (function, state array)
        ty, val = ty[1], builder.extract_value(val, 1)
    if isinstance(ty, types.Array):
        return builder.bitcast(context.make_array(ty)(context, builder, val).data, _I8P)
    if isinstance(ty, types.Record):  # a record value is a pointer to its data
        return builder.bitcast(val, _I8P)
    if by_pointer(dtype_of(target or ty)):  # a struct, half, complex or vector: a copy
        val = context.cast(builder, val, ty, target) if target is not None else val
        return builder.bitcast(cgutils.alloca_once_value(builder, val), _I8P)
    if isinstance(ty, types.Boolean) or types.unliteral(ty) == types.boolean:
        return builder.zext(val, ir.IntType(8))
    return context.cast(builder, val, ty, target or types.unliteral(ty))


def lower_call(p, context, builder, sig, args, self_ptr=None, kept=None):
    """Emit the call of ``p``'s shim. ``kept``: {name: (type, data pointer)} of the arguments
    an object keeps, passed after the call's own, then the constants the call passes without
    the user (SplitCall.constants)."""
    # positionals first; a storage passed first (make_template) is a keyword. numba drops the
    # pysig from bound-method signatures: all positional
    names = list(sig.pysig.parameters) if sig.pysig is not None else [POSITIONAL] * len(sig.args)
    order = sorted(range(len(sig.args)), key=lambda i: not names[i].startswith(POSITIONAL))
    sig_args, args = [sig.args[i] for i in order], [args[i] for i in order]
    n_pos = sum(n.startswith(POSITIONAL) for n in names)
    pos, kws = tuple(sig_args[:n_pos]), {names[i]: sig.args[i] for i in order[n_pos:]}
    kept = kept or {}
    with as_typing_errors():
        r, bound = _resolve(p, pos, dict(kws, **{k: t for k, (t, _) in kept.items()}))
        constants = split_call(p, pos, kws).constants if p.parent is None and not p.infer \
            else []
        site = kernel_lowering_site(p, r, p.parent is not None or "threads_per_block" in kws
                                    or "threads_per_block" in p.fixed)
        if p.constructor:
            slot = cgutils.alloca_once(builder, ir.ArrayType(ir.IntType(8), PARENT_BYTES),
                                       name="coopgen_parent")
            slot.align = PARENT_ALIGN
            self_ptr = builder.bitcast(slot, _I8P)
        text = _shim_text(p, context, builder, r, len(bound), site)
    passed = (list(zip(sig_args, args)) + list(kept.values())
              + [_constant(context, v) for _, v in constants])
    n_call, n_kept = len(sig_args), len(kept)
    target = {b.arg_index: to_numba(b.type) for b in r.bindings
              if b.source == "arg" and isinstance(b.type, desc.Scalar)}
    llargs, slots = [], []
    for _, _, source, index in text.c_params:
        if source == "self":
            llargs.append(self_ptr)
        elif source == "ret":
            nbty = to_numba(r.returns[index][1])
            slots.append((cgutils.alloca_once(builder, context.get_data_type(nbty)), nbty))
            llargs.append(slots[-1][0])
        elif n_call <= index < n_call + n_kept:  # a kept argument: already a data pointer
            llargs.append(builder.bitcast(passed[index][1], _I8P))
        else:
            llargs.append(_pass(context, builder, *passed[index], source, target.get(index)))
    fnty = ir.FunctionType(ir.VoidType(), [a.type for a in llargs])
    builder.call(cgutils.get_or_insert_function(builder.module, fnty, text.symbol), llargs)
    vals = [context.data_model_manager[t].load_from_data_pointer(builder, s) for s, t in slots]
    if p.constructor:  # the data pointers of the arrays it keeps go to the slot's tail
        for k, (_, _, index) in enumerate(bound):
            data = context.make_array(sig_args[index])(context, builder, args[index]).data
            builder.store(builder.bitcast(data, _I8P), bound_slot(builder, self_ptr, k))
        vals = [self_ptr] + vals
    if not vals:
        return context.get_dummy_value()
    return vals[0] if len(vals) == 1 else context.make_tuple(builder, sig.return_type, vals)


def _constant(context, value):
    """(type, LLVM value) of a fixed call argument: numbers as constants; operators (names,
    functions) carry no run-time value."""
    ty = constant_type(value)
    plain = types.unliteral(ty)
    if dtype_of(plain) in (desc.Scalar("float16"), desc.Scalar("bfloat16")):
        # numba-cuda makes no half constants: their bits, as a half
        bits = int(np.asarray(value).view(np.uint16))
        return plain, ir.Constant(ir.IntType(16), bits).bitcast(context.get_value_type(plain))
    if isinstance(plain, (types.Number, types.Boolean)):
        return plain, context.get_constant(plain, value)
    return ty, context.get_dummy_value()


class PrimitiveClassType(CallableObject):
    """``block.BlockHistogram`` inside a kernel: its attributes are the methods (one-shot
    calls); calling it constructs a parent object (``h = block.BlockHistogram(...)``)."""

    def __init__(self, obj):
        super().__init__(obj, f"coopgen.{obj._scope}.{obj._cls.name}@{id(obj):x}")

    def _target(self):
        return self.obj.constructor._nbtype

    def get_impl_key(self, sig):
        return self.obj.constructor


register_model(PrimitiveClassType)(OpaqueModel)


@infer_getattr
class _ParentAttrs(AttributeTemplate):
    key = ParentType

    def generic_resolve(self, typ, attr):
        names = typ.kind.method_names()
        if attr not in names:
            raise CoopgenTypeError(f"{typ.cls.name} object has no method {attr!r}; methods: "
                                   f"{', '.join(names)}")
        return types.BoundFunction(_parent_method_template(typ.cls, names[attr]), typ)


@functools.cache
def _parent_method_template(cls: ClassSpec, attr: str):
    key = f"coopgen.{cls.name}.{attr}"

    class ParentMethod(AbstractTemplate):
        prefer_literal = True

        def generic(self, args, kws):
            ret = call_type(self.this.kind.method_entry(attr), args,
                            dict(kws, **self.this.kind.kept_keywords(self.this.bound, attr)))
            return positional_signature(ret, args, kws, recvr=self.this)

    ParentMethod.key = key
    ParentMethod.__name__ = f"ParentMethod_{cls.name}_{attr}"

    @lower_builtin(key, ParentType, types.VarArg(types.Any))
    def lower(context, builder, sig, args):
        # numba passes the object first in ``args``; ``sig.args`` may or may not include it
        margs = sig.args[1:] if len(sig.args) == len(args) else sig.args
        parent = sig.recvr if sig.recvr is not None else sig.args[0]
        p = parent.kind.method_entry(attr)
        msig = signature(sig.return_type, *margs).replace(pysig=sig.pysig)
        taken = parent.kind.kept_keywords(parent.bound, attr)
        kept = {name: (ty, builder.load(bound_slot(builder, args[0], k)))
                for k, (name, ty) in enumerate(parent.bound) if name in taken}
        return lower_call(p, context, builder, msig, args[1:], self_ptr=args[0], kept=kept)

    return ParentMethod


@infer_getattr
class _PrimitiveClassAttrs(AttributeTemplate):
    key = PrimitiveClassType

    def generic_resolve(self, typ, attr):
        return method._nbtype if (method := typ.obj._methods.get(attr)) is not None else None


lower_getattr_generic(PrimitiveClassType)(
    lambda context, builder, typ, value, attr: context.get_dummy_value())


HOOKS = hooks.Hooks(lambda value: describe(constant_type(value)), bit_field_digits, _launch_dims)
hooks.installed.append(HOOKS)
