"""A primitive called while CuTe DSL traces a kernel: its arguments described, resolved to a
plan, written as a shim that joins the trace's bundle, and emitted as a ``func.call`` of the
shim's C symbol. Register fragments go through a stack slot of the kernel's entry block (which
libNVVM's SROA turns back into registers once the shim is inlined); shared and global tensors
pass the address of their first item."""
import collections
import contextlib

import cutlass
import cutlass.cute as cute
import numpy as np
from cutlass._mlir import ir
from cutlass._mlir.dialects import arith, llvm
from cutlass._mlir.dialects import cute as cute_ir
from cutlass.base_dsl.enums import AddressSpace
from cutlass.base_dsl.ffi import FFI
from cutlass.base_dsl.utils.mlir_value_tree import extract_mlir_values

from ..codegen import shims
from ..codegen.layout import check_storage_fits
from ..codegen.storage import TempStorage
from ..codegen.shims import PARENT_BYTES
from ..model.backends import NOT_TRACING
from ..model.errors import CoopgenError
from ..resolve import call as calls
from ..resolve import hooks
from ..resolve.entry import ObjectKind
from ..resolve.operators import key_order, operator_signatures, ordered_key_bits
from ..types import desc
from ..types.cpp import by_pointer
from .bundle import bundle_for, current_kernel, launch_dims
from . import operators
from .describe import NUMBERS, constant, describe, number_class, unsigned_tensors

#: "Class::Signature" of recent resolutions, so tests can see which overload a call chose.
RESOLVED = collections.deque(maxlen=10000)


def _digits(first: int, count: int, dtype=None):
    """A digit extractor of bits [first, first + count), traced like any Python operator; of
    signed and floating keys (numpy's ``dtype``), of their bits put in order."""
    mask, order = (1 << count) - 1, key_order(dtype)

    def bit_field(key):
        return (key >> first) & mask

    def ordered_bit_field(key):
        unsigned = NUMBERS[f"uint{order[1]}"]
        bits = ordered_key_bits(key.bitcast(unsigned), *order, unsigned, cutlass.select_)
        return (bits >> unsigned(first)) & unsigned(mask)
    return bit_field if order is None else ordered_bit_field


HOOKS = hooks.Hooks(constant, _digits, launch_dims)
hooks.installed.append(HOOKS)


class CoopgenCuteError(CoopgenError):
    """A call to a coopgen primitive inside a CuTe DSL kernel that cannot be compiled."""


@contextlib.contextmanager
def _serving():
    try:
        with hooks.serving(HOOKS):
            yield
    except CoopgenCuteError:
        raise
    except CoopgenError as e:
        raise CoopgenCuteError(str(e)) from None


def trace(p, args: tuple, kws: dict):
    """Emit the call of entry point ``p`` into the kernel being traced (NOT_TRACING outside
    one: a host call makes a two-phase object)."""
    kernel = current_kernel()
    if kernel is None:
        return NOT_TRACING
    with _serving():
        if not hasattr(p, "cls"):  # a group call, a group's query, coop.ThreadData
            from . import groups
            return groups.traced(p, args, kws)
        try:
            return _call(p, kernel, args, kws)
        except CoopgenError as e:
            # cuda.coop's two-phase objects take their storage first: obj(ts, src, dst), a
            # TempStorage or a shared uint8 tensor
            if not _storage_first(p, args, kws):
                raise
            first = e
        try:
            return _call(p, kernel, args[1:], {"temp_storage": args[0], **kws})
        except CoopgenError:
            if isinstance(args[0], TempStorage):
                raise
            raise first from None


def _storage_first(p, args: tuple, kws: dict) -> bool:
    ts = args[0] if args else None
    storage = isinstance(ts, TempStorage) or (
        isinstance(ts, cute.Tensor) and ts.memspace == AddressSpace.smem
        and ts.element_type is cutlass.Uint8)
    return storage and p.fixed and not (p.constructor or p.infer or p.parent is not None
                                        or "temp_storage" in kws)


class CuteObject:
    """A CUB object constructed in a traced kernel (``block.histogram(items, hist)``,
    ``block.BlockRadixSort(...)``): its methods emit calls on it, with the arguments it keeps."""

    def __init__(self, kind, kept: dict, self_ptr, kernel):
        self._kind, self._kept, self._self, self._kernel = kind, kept, self_ptr, kernel

    def __getattr__(self, attr):
        names = self._kind.method_names()
        if attr not in names:
            raise AttributeError(f"{self._kind.cls.name} object has no method {attr!r}; "
                                 f"methods: {', '.join(names)}")
        entry = self._kind.method_entry(names[attr])
        taken = self._kind.kept_keywords(tuple((n, d) for n, (d, _) in self._kept.items()),
                                         names[attr])

        def method(*args, **kws):
            with _serving():
                return _call(entry, self._kernel, args,
                             {**kws, **{n: self._kept[n][1] for n in taken}}, self._self)
        method.__name__ = attr
        return method


def _call(p, kernel, args: tuple, kws: dict, self_ptr=None):
    descs = unsigned_tensors(p.name, [describe(a) for a in (*args, *kws.values())])
    pos, named = tuple(descs[:len(args)]), dict(zip(kws, descs[len(args):]))
    bound = ()
    if p.infer:
        r, bound = calls.resolve_object(p, pos, named)
    else:
        r = calls.resolve_call(p, pos, named)
    if r.temp_storage_arg is not None:
        check_storage_fits(p.name, r)
    RESOLVED.append(f"{r.cls.name}::{r.method.signature}")
    bundle = bundle_for(p.name)
    ts = r.temp_storage_arg[1] if r.temp_storage_arg else None
    use_index = bundle.next_use_index(ts.symbol) if isinstance(ts, desc.Storage) else 0
    mode = "construct" if p.constructor else "method" if p.parent is not None else None
    text = shims.build(r, operator_signatures(p.name, r), object_mode=mode,
                       object_bytes=PARENT_BYTES, use_index=use_index)
    bundle.add(text)
    for i, sym, argtypes, restype in text.op_symbols:
        op = r.bindings[i].operator
        if op.state is not None:
            raise CoopgenError(f"{p.name}: stateful operators are not bound for CuTe DSL "
                               f"kernels yet")
        operators.define(p.name, kernel, sym, op.function.ref, argtypes, restype)
    values, descs = [*args, *kws.values()], [*pos, *named.values()]
    if p.parent is None and not p.infer:
        split = calls.split_call(p, pos, named)
        values += [v for _, v in split.constants]
        descs += [d for d, _ in split.constants]
    if p.constructor:
        self_ptr = _slot(kernel, ir.IntegerType.get_signless(8), PARENT_BYTES)
    out = _emit(p, r, text, kernel, values, descs, self_ptr)
    if not p.constructor:
        return out
    tkws = tuple(calls.split_call(p, pos, named).tkws.items())
    obj = CuteObject(ObjectKind.of(p, r, tkws), {n: (d, values[i]) for n, d, i in bound},
                     self_ptr, kernel)
    return obj if out is None else (obj, *(out if isinstance(out, tuple) else (out,)))


def _entry_block(kernel):
    return kernel.regions[0].blocks[0]


def _slot(kernel, mtype, count: int):
    """A stack slot of ``count`` items in the kernel's entry block (not round a loop)."""
    block = _entry_block(kernel)
    ip = ir.InsertionPoint.at_block_begin(block) if len(block.operations) == 0 else \
        ir.InsertionPoint(block.operations[0])
    with ip:
        n = arith.constant(ir.IntegerType.get_signless(32), count)
        return llvm.alloca(res=llvm.PointerType.get(), array_size=n, elem_type=mtype,
                           alignment=16)


def _at(ptr, mtype, i: int):
    return ptr if i == 0 else llvm.getelementptr(llvm.PointerType.get(), ptr, [], [i], mtype,
                                                 None)


def _address(tensor):
    """A shared or global tensor's first item as a generic pointer."""
    (ptr,) = extract_mlir_values(tensor.iterator)
    space = cute_ir.PtrType(ptr.type).address_space
    as_int = cute_ir.ptrtoint(ir.IntegerType.get_signless(64), ptr)
    typed = llvm.inttoptr(llvm.PointerType.get(space), as_int)
    return typed if space == 0 else llvm.addrspacecast(llvm.PointerType.get(), typed)


def _scalar(value, d, target):
    """A number as the shim takes it: cast to the bound C type; bool as i1."""
    t = target if isinstance(target, desc.Scalar) else desc.unliteral(d)
    cls = number_class(t)
    if isinstance(value, np.generic):  # a numpy constant (an operator's identity): cutlass
        value = value.item()  # numbers are made from Python's
    return cls, t, cls(value).ir_value()


def _emit(p, r, text, kernel, values, descs, self_ptr):
    targets = {b.arg_index: b.type for b in r.bindings
               if b.source == "arg" and isinstance(b.type, desc.Scalar)}
    operands, after, returns = [], [], []
    for _, _, source, index in text.c_params:
        if source == "ret":
            ret = r.returns[index][1]
            cls = number_class(ret)
            slot = _slot(kernel, cls.mlir_type, 1)
            operands.append(slot)
            returns.append((cls, slot))
            continue
        if source == "self":
            operands.append(self_ptr)
            continue
        if source != "arg":
            raise CoopgenError(f"{p.name}: stateful operators are not bound for CuTe DSL "
                               f"kernels yet")
        value, d = values[index], descs[index]
        if isinstance(d, desc.Array):
            if d.space == "local":
                operands.append(_registers(kernel, value, d, after))
            else:
                operands.append(_address(value))
            continue
        cls, t, v = _scalar(value, d, targets.get(index))
        if by_pointer(t):
            slot = _slot(kernel, cls.mlir_type, 1)
            llvm.store(v, slot)
            v = slot
        operands.append(v)
    FFI(name=text.symbol, params_types=[o.type for o in operands], inline=True)(*operands)
    for copy_back in after:
        copy_back()
    outs = [cls(llvm.load(cls.mlir_type, slot)) for cls, slot in returns]
    return None if not outs else outs[0] if len(outs) == 1 else tuple(outs)


def _registers(kernel, tensor, d, after):
    """A register fragment's stack slot: its items copied in, and back after the call."""
    if d.length is None:
        raise CoopgenError(f"a register tensor of dynamic size ({d}): coopgen needs its items "
                           f"per thread at compile time")
    cls = number_class(d.dtype)
    slot = _slot(kernel, cls.mlir_type, d.length)
    for i in range(d.length):
        llvm.store(tensor[i].ir_value(), _at(slot, cls.mlir_type, i))

    def copy_back():
        for i in range(d.length):
            tensor[i] = cls(llvm.load(cls.mlir_type, _at(slot, cls.mlir_type, i)))
    after.append(copy_back)
    return slot
