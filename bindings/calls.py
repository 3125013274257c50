"""numba typing and lowering of primitive calls, driven by the generated specs.

A ``Primitive`` is anything a kernel can call: a faithful method (``block.BlockScan.ExclusiveSum``),
a Pythonic function (``block.exclusive_sum``) or a two-phase object made on the host with fixed
template arguments. One template class types them all (coopgen.resolve picks the overload);
one lowering function emits the shim call and registers the shim with the kernel's bundle, so
every shim of a kernel compiles in one NVRTC call.
"""
from __future__ import annotations

import collections
import contextlib
import contextvars
import dataclasses
import inspect

import numpy as np

from llvmlite import ir
from numba.cuda import cgutils, types
from numba.cuda.extending import lower_builtin, register_model, typeof_impl
from numba.cuda.typing.typeof import Purpose, typeof
from numba.cuda.launchconfig import current_launch_config
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.typing.templates import (AbstractTemplate, AttributeTemplate, infer_getattr,
                                         signature)
from numba.cuda.core.imputils import lower_cast, lower_getattr_generic

from . import shims
from .model import registry
from .arrays import SizedArray, align_numba_shared_bytes
from .ctypes_map import is_struct
from .errors import CoopgenTypeError
from .lowering_context import (bound_kernel_threads, check_not_in_device_function,
                               kernel_lowering_site, use_short_shared_pointers)
from .operators import compile_operator, identity_of, operator_signatures
from .pythonic import CallShape, pick
from .resolve import (Resolved, check_host_keywords, class_template_args, resolve, same_value,
                      template_keywords)
from .shimcall import Shim, bundle_for
from .model.spec import ClassSpec, MSpec
from .storage import TempStorageType

_POS = "coopgen_pos_"  # names of positional parameters in the folded pysig
#: "Class::Signature" of recent resolutions, so tests can see which overload a call chose.
RESOLVED = collections.deque(maxlen=10000)


class NothingToLink(list):
    """``obj.files`` of a two-phase object: empty, since ``cuda.jit(link=...)`` has nothing to
    add (each kernel links the code it uses), yet true, as cuda.coop's objects' lists were and
    as code written for them checks."""

    def __bool__(self) -> bool:
        return True


class Primitive:
    """A callable entry point: one class's overloads (optionally several methods picked by a
    ``select`` keyword), with template arguments fixed by a two-phase constructor."""

    def __init__(self, name: str, cls: ClassSpec, methods: dict[str, tuple[MSpec, ...]],
                 *, select: str | None = None, fixed: dict | None = None,
                 constructor: bool = False, parent: "ParentType | None" = None,
                 infer: str | None = None, bind: tuple = (), aliases: dict | None = None,
                 register: bool = True, shape: CallShape | None = None,
                 host: tuple | None = None, instance: tuple | None = None,
                 call_fixed: dict | None = None, method_args: dict | None = None):
        self.name = name
        self.__doc__ = registry.docstrings().get(name)  # help(): the reference's section
        # cuda.coop's call shape (Pythonic functions; None for the faithful surface), the
        # positional order of the two-phase host call and of the objects it returns, and
        # call arguments a two-phase constructor fixed (an operator, an initial value).
        self.shape = shape
        self.host = host
        self.instance = instance
        self.call_fixed = dict(call_fixed or {})
        self.method_args = dict(method_args or {})  # object methods' positional order
        self.infer = infer  # object factory: the method whose call infers the template args
        self.bind = tuple(bind)  # ... the arguments the object keeps
        self.aliases = aliases  # ... and its snake_case method names
        self.cls = cls
        self.methods = methods
        self.select = select
        self.fixed = dict(fixed or {})
        self.constructor = constructor  # calls build a parent object
        self.parent = parent  # calls are methods of this constructed object
        # Entry points users can reach get numba typing and lowering; internal views (an
        # object's methods, a factory's inference) are resolved directly and register nothing.
        if register and parent is None:
            self._template = _make_template(self)
            self._nbtype = types.Function(self._template)
            lower_builtin(self, types.VarArg(types.Any))(_make_lowering(self))

    def __repr__(self):
        fixed = ", ".join(f"{k}={v!r}" for k, v in self.fixed.items())
        return f"<coopgen {self.name}({fixed})>"

    def __call__(self, *args, **kws):
        """Two-phase use on the host: fix the dtype, template arguments and operators now,
        call the returned object inside kernels. ``block.sum(np.int32, 128, 4)``,
        ``block.load(np.int32, 128, 4, "warp_transpose")``: cuda.coop's positional order."""
        from .twophase import host_arguments

        fixed, call_fixed = host_arguments(self, args, kws)
        instance = self.instance
        if instance is None and self.shape is not None and self.shape.slots is not None:
            # cuda.coop's objects take the single-phase call less its template arguments and
            # the operators the host call fixed; a value the host call gave (an initial value,
            # a valid count) keeps its slot, so ws(x, 0) passes the initial value again
            operators = {k for k, v in call_fixed.items() if callable(v) or isinstance(v, str)}
            taken = set(fixed) | operators | self.template_keywords()
            instance = tuple(n for n in self.shape.slots
                             if self.shape.rename.get(n, n) not in taken and n not in taken)
        if instance is not None and self.shape is not None:
            instance = _declared_first(instance, self.host or (), args, kws)
        shape = None if self.shape is None else self.shape.with_slots(None) if instance is None \
            else self.shape.for_objects(instance, fixed, call_fixed)
        return Primitive(self.name, self.cls, self.methods, select=self.select, fixed=fixed,
                         constructor=self.constructor, infer=self.infer, bind=self.bind,
                         aliases=self.aliases, shape=shape, call_fixed=call_fixed,
                         method_args=self.method_args)

    def __getattr__(self, name):
        """An object factory's methods (``histo.init``, ``rld.decode``) exist on the host too, as
        cuda.coop's objects have them; they are called on the object a kernel makes."""
        aliases = self.__dict__.get("aliases") or {}
        if name in aliases:
            def method(*args, **kws):
                raise TypeError(f"{self.name}.{name}: call it inside a kernel, on the object "
                                f"{self.name}(...) returns there")
            method.__name__ = name
            return method
        raise AttributeError(f"{self.__dict__.get('name', type(self).__name__)!r} has no "
                             f"attribute {name!r}")

    def class_template_kws(self) -> dict:
        """The fixed template keywords that are the class's (not the method selector)."""
        return {k: v for k, v in self.fixed.items() if k != self.select}

    @property
    def files(self) -> list:
        """Nothing to link: kernels link their primitives themselves. (Old cuda.coop code passes
        ``link=obj.files`` to ``cuda.jit``; it keeps working.)"""
        return NothingToLink()

    @property
    def temp_storage_bytes(self) -> int:
        from .layout import temp_storage_layout
        return temp_storage_layout(self.cls, self.class_template_kws())[0]

    @property
    def temp_storage_alignment(self) -> int:
        from .layout import temp_storage_layout
        return temp_storage_layout(self.cls, self.class_template_kws())[1]

    def template_keywords(self) -> set[str]:
        kws = template_keywords(self.cls)
        if self.select:
            kws.add(self.select)
        return kws

    def pick_methods(self, selector) -> tuple[MSpec, ...]:
        if self.select is None:
            return self.methods[""]
        if selector is None:
            raise CoopgenTypeError(f"{self.name}: missing required argument {self.select}=; "
                                   f"allowed: {', '.join(map(repr, self.methods))}")
        chosen = pick(self.name, self.select, list(self.methods), selector)
        return tuple(m for key in chosen for m in self.methods[key])


def _declared_first(instance: tuple, host_slots: tuple, args: tuple, kws: dict) -> tuple:
    """An argument the host call declared rather than gave (a ``StatefulFunction``: each call
    passes its state) comes right after the leading two arrays in the object's calls, as in
    cuda.coop's scan objects: ``scan(ts, items, out, state)``, ``scan(ts, item, state)``."""
    from .operators import StatefulFunction

    declared = [k for k, v in kws.items() if isinstance(v, StatefulFunction)]
    declared += [host_slots[i] for i, v in enumerate(args)
                 if isinstance(v, StatefulFunction) and i < len(host_slots)]
    moved = [n for n in instance if n in declared]
    if not moved:
        return instance
    rest = [n for n in instance if n not in moved]
    return tuple(rest[:2] + moved + rest[2:])


@typeof_impl.register(Primitive)
def _typeof_primitive(val, c):
    from .host_objects import as_argument
    return as_argument(val, c) or val._nbtype


def _literal(prim: str, key: str, ty):
    """The Python value of a template keyword argument, which must be a compile-time constant."""
    if isinstance(ty, types.Literal):
        return ty.literal_value
    if isinstance(ty, types.BaseTuple) and all(isinstance(t, types.Literal) for t in ty):
        return tuple(t.literal_value for t in ty)
    if isinstance(ty, (types.NumberClass, types.DType)):
        return ty
    if isinstance(ty, types.Omitted):
        return ty.value
    raise CoopgenTypeError(f"{prim}: {key}= must be a compile-time constant, got {ty}")


_assumed_block = contextvars.ContextVar("coopgen_assumed_block", default=None)


@contextlib.contextmanager
def block_shape(threads_per_block):
    """Compile ahead of time (``cuda.compile_all``, ``cuda.jit(sig)``) as if launched with
    ``threads_per_block`` threads: there is no launch to infer the block shape from."""
    dims = (threads_per_block,) if isinstance(threads_per_block, int) else tuple(threads_per_block)
    token = _assumed_block.set(tuple(dims) + (1,) * (3 - len(dims)))
    try:
        yield
    finally:
        _assumed_block.reset(token)


def _launch_dims(needed: bool):
    """The launching block shape (and mark the kernel as specialised on it)."""
    cfg = current_launch_config()
    if cfg is None:
        return _assumed_block.get()
    if needed:
        cfg.dispatcher.mark_launch_config_sensitive()
    return tuple(cfg.blockdim)


@dataclasses.dataclass
class SplitCall:
    """A call's arguments sorted for the resolver: positionals (faithful surface only),
    method keywords under CUB's names, template keyword values, explicit temp storage; and
    where each resolver argument sits in the call's folded arguments."""
    args: tuple
    mkws: dict
    alternatives: dict  # keyword -> CUB spellings when the overloads differ
    origins: list
    tkws: dict
    storage: tuple | None
    # Constants the call passes without the user (fixed arguments, an injected identity):
    # (numba type, value), following the call's own arguments in the folded list.
    constants: list = dataclasses.field(default_factory=list)

    def add_constant(self, name: str, value, n_folded: int) -> None:
        ty = constant_type(value)
        self.mkws[name] = ty
        self.origins.append(n_folded + len(self.constants))
        self.constants.append((ty, value))


def constant_type(value) -> types.Type:
    """The numba type of a Python value a call passes as a compile-time constant."""
    if isinstance(value, (str, bool, int)) and not isinstance(value, np.integer):
        return types.literal(value)
    if isinstance(value, tuple):
        return types.Tuple([constant_type(v) for v in value])
    return typeof(value, Purpose.constant)


def split_call(p: Primitive, args: tuple, kws: dict) -> SplitCall:
    n_folded = len(args) + len(kws)
    if p.shape is not None and p.shape.slots is not None:
        named = p.shape.name_arguments(tuple(args), dict(kws))
        pos = ()
    else:
        named = [(k, v, len(args) + j) for j, (k, v) in enumerate(kws.items())]
        pos = tuple(args)
    tkw_names = p.template_keywords() - {"temp_storage"}
    split = SplitCall(pos, {}, {}, list(range(len(pos))), dict(p.fixed), None)
    bit_range = p.shape.bit_range_names() if p.shape is not None else ()
    bits = {}  # begin_bit / end_bit of a digit range (CallShape.digits)
    for name, ty, origin in named:
        spellings = (name,) if isinstance(name, str) else tuple(name)
        name = spellings[0]
        if name == "temp_storage":
            split.storage = (origin, ty)
        elif name in tkw_names or name in bit_range:
            value = _literal(p.name, name, ty)
            if name in p.fixed and not same_value(p.fixed[name], value):
                raise CoopgenTypeError(f"{p.name}: {name}={value!r}, but this object was made "
                                       f"with {name}={p.fixed[name]!r}")
            (bits if name in bit_range else split.tkws)[name] = value
        else:
            split.mkws[name] = ty
            split.origins.append(origin)
            if len(spellings) > 1:
                split.alternatives[name] = spellings
    fixed = dict(p.shape.fixed) if p.shape is not None else {}
    for name in set(fixed) & (set(split.mkws) | set(split.tkws)):
        raise CoopgenTypeError(f"{p.name}: {name}= is not an argument of {p.name}, which always "
                               f"passes {name}={fixed[name]!r}")
    # what a two-phase constructor fixed, unless the call passes it again (cuda.coop's
    # scan objects take the initial value in the call as well): the call's value is used
    fixed.update({k: v for k, v in p.call_fixed.items() if k not in split.mkws})
    for name, value in fixed.items():
        if name in bit_range:
            bits[name] = value
        else:
            split.add_constant(name, value, n_folded)
    if bits or (bit_range and p.shape.digits[2] not in split.mkws):
        template, extractor = p.shape.digit_arguments(bits)
        split.tkws.update(template)
        split.add_constant(p.shape.digits[2], extractor, n_folded)
    if p.shape is not None:
        for k, v in p.shape.defaults_for(set(split.tkws) | set(split.mkws)).items():
            split.tkws.setdefault(k, v)
        _check_since(p, split.mkws)
        _inject_identity(p, split, n_folded)
    return split


def _inject_identity(p: Primitive, split: SplitCall, n_folded: int) -> None:
    """cuda.coop's scans without an initial value start from the operator's identity (CUB
    has no public exclusive scan of arrays without one): the table's ``identity`` row names
    (the argument to fill, the operator, the argument that makes it unnecessary)."""
    if not p.shape.identity:
        return
    target, op_name, unless = (p.shape.rename.get(n, n) for n in p.shape.identity)
    if target in split.mkws or unless in split.mkws or op_name not in split.mkws:
        return
    # Arrays only: CUB's scans of one scalar take no initial value where it is not needed
    value_type = p.cls.value_type.name if p.cls.value_type else None
    items = next((split.mkws[x.name] for ms in p.methods.values() for m in ms
                  for x in m.params if x.base == value_type and x.name in split.mkws), None)
    if not isinstance(items, types.Array):
        return
    # Only where CUB's documented API needs it: an inclusive scan of arrays takes the operator
    # alone, and an injected value there is no identity for float items (+inf min the dtype's
    # max is not +inf). (CUB's undocumented exclusive scans without one leave thread 0's first
    # output undefined: they serve operators without a known identity.)
    methods = p.pick_methods(split.tkws.get(p.select) if p.select else None)
    if any(op_name in names and target not in names and unless not in names
           for names in ({x.name for x in m.params} for m in methods if not m.hidden
                         if any(x.extent and x.base == value_type for x in m.params))):
        return
    value = identity_of(split.mkws[op_name], items.dtype)
    if value is not None:
        split.add_constant(target, value, n_folded)


def _check_since(p: Primitive, mkws: dict) -> None:
    """An argument only newer CUB has: say which CCCL to select, rather than 'unknown'."""
    have = {x.name for ms in p.methods.values() for m in ms for x in m.params}
    for name, version in p.shape.since.items():
        cub = p.shape.rename.get(name, name)
        if cub in mkws and cub not in have:
            raise CoopgenTypeError(
                f"{p.name}: {name}= needs CCCL {version} or newer (this is CCCL "
                f"{registry.package().CCCL}); set COOPGEN_CCCL={version} to use it")


def _remapped(r: Resolved, origins: list) -> Resolved:
    """Argument indices of ``r`` (into the resolver's arguments) as indices into the call's
    folded arguments, which lowering reads."""
    bindings = tuple(dataclasses.replace(b, arg_index=origins[b.arg_index])
                     if b.arg_index is not None else b for b in r.bindings)
    return dataclasses.replace(r, bindings=bindings)


def resolve_call(p: Primitive, args: tuple, kws: dict, block_dims=None) -> Resolved:
    if p.parent is not None:  # a method of a constructed object: its template args are fixed
        split = split_call(p, args, kws) if p.shape is not None else \
            SplitCall(tuple(args), dict(kws), {}, list(range(len(args) + len(kws))), {}, None)
        r = resolve(p.name, p.cls, p.pick_methods(None), split.args, split.mkws,
                    template_kws={}, block_dims=p.parent.block_dims, enums=registry.enums(),
                    pinned={t.name: v for t, v in p.parent.template_args},
                    alternatives=split.alternatives)
        return _remapped(r, split.origins)
    return _resolve_split(p, split_call(p, args, kws), block_dims)


def _resolve_split(p: Primitive, split: SplitCall, block_dims=None) -> Resolved:
    tkws = dict(split.tkws)
    selector = tkws.pop(p.select, None) if p.select else None
    methods = p.pick_methods(selector)
    needs_block = p.cls.scope == "block" or p.cls.temp_storage != "none"
    dims = block_dims or _launch_dims(needs_block and "threads_per_block" not in tkws)
    if p.constructor:  # TempStorage& overloads when temp_storage= is given (or no other)
        with_ts = tuple(m for m in methods if any(x.role == "temp_storage" for x in m.params))
        without = tuple(m for m in methods if m not in with_ts)
        methods = with_ts if split.storage is not None else (without or with_ts)
    r = resolve(p.name, p.cls, methods, split.args, split.mkws, template_kws=tkws,
                block_dims=dims, enums=registry.enums(), temp_storage=split.storage,
                alternatives=split.alternatives)
    return _remapped(r, split.origins)


def resolve_object(p: Primitive, args: tuple, kws: dict):
    """An object factory call (``block.histogram(items, bins)``): infer the class's template
    arguments from a call of ``p.infer`` with these arguments, then pick the constructor.
    Returns (constructor resolution, bound arguments as (name, type, argument index))."""
    inf = Primitive(p.name, p.cls, {"": p.cls.overloads(p.infer)}, fixed=p.fixed,
                    register=False, shape=p.shape)
    split = split_call(inf, args, kws)
    storage = split.storage
    split.storage = None
    if not split.mkws and p.fixed:
        # a two-phase object called with nothing to infer from (cuda.coop's h() before
        # h.init(hist)): the host fixed the template arguments; methods take every argument
        tkws = {k: v for k, v in split.tkws.items() if k != p.select}
        template_args = class_template_args(p.name, p.cls, tkws, registry.enums())
        by_keyword = {t.keyword: v for t, v in template_args}
        dims = tuple(int(by_keyword.get(f"block_dim_{a}", 1)) for a in "xyz")
        pinned, bindings = {t.name: v for t, v in template_args}, ()
    else:
        r_inf = _resolve_split(inf, split)
        pinned, dims, bindings = ({t.name: v for t, v in r_inf.template_args},
                                  r_inf.block_dims, r_inf.bindings)
    methods = tuple(m for m in p.cls.constructors
                    if any(x.role == "temp_storage" for x in m.params) == (storage is not None))
    r = resolve(p.name, p.cls, methods, (), {}, template_kws={},
                block_dims=dims, enums=registry.enums(), temp_storage=storage,
                pinned=pinned)
    bound = tuple((b.param.name, b.nbtype, b.arg_index) for b in bindings
                  if b.param.name in p.bind and b.source == "arg")
    return r, bound


def _call_type(p: Primitive, args: tuple, kws: dict):
    """The return type of a call of ``p`` (it resolves the overload, or raises)."""
    bound = ()
    if p.infer:
        r, bound = resolve_object(p, args, kws)
    else:
        r = resolve_call(p, args, kws)
    RESOLVED.append(f"{r.cls.name}::{r.method.signature}")
    ret = r.return_type
    if p.constructor:
        tk = split_call(p, args, kws).tkws
        parent = ParentType(p, r, tuple(tk.items()),
                            bound=tuple((n, t) for n, t, _ in bound),
                            aliases=p.aliases)
        outs = [t for _, t, _ in r.returns]
        ret = types.Tuple([parent] + outs) if outs else parent
    return ret


def _storage_first(p: Primitive, args: tuple, kws: dict) -> bool:
    """Whether ``args[0]`` may be the storage of a two-phase object's call, which cuda.coop
    passes first (``block_load(temp_storage, d_in, items)``): a TempStorage or a uint8 array."""
    if not p.fixed or p.constructor or p.infer or p.parent is not None or not args \
            or "temp_storage" in kws:
        return False
    ts = args[0]
    return isinstance(ts, TempStorageType) or (
        isinstance(ts, types.Array) and ts.ndim == 1 and ts.dtype == types.uint8)


def _make_template(p: Primitive):
    class CoopgenCall(AbstractTemplate):
        key = p
        prefer_literal = True

        def generic(self, args, kws):
            try:
                ret = _call_type(p, args, kws)
                names = [f"{_POS}{i}" for i in range(len(args))] + list(kws)
            except CoopgenTypeError as first:
                if not _storage_first(p, args, kws):
                    raise
                # cuda.coop's two-phase objects take their storage first: obj(ts, src, dst)
                try:
                    ret = _call_type(p, args[1:], {"temp_storage": args[0], **kws})
                except CoopgenTypeError:
                    if isinstance(args[0], TempStorageType):
                        raise
                    raise first from None
                names = (["temp_storage"] + [f"{_POS}{i}" for i in range(len(args) - 1)]
                         + list(kws))
            pysig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                       for n in names])
            folded = tuple(args) + tuple(kws.values())
            return signature(ret, *folded).replace(pysig=pysig)

    CoopgenCall.__name__ = f"CoopgenCall_{p.name.replace('.', '_')}"
    return CoopgenCall


def _split_sig(sig):
    """(positional types, keyword types, number of positionals, the order of ``sig.args`` that
    puts positionals first): a storage passed first (:func:`_storage_first`) is a keyword."""
    if sig.pysig is None:  # numba drops it from bound-method signatures: all positional
        return sig.args, {}, len(sig.args), list(range(len(sig.args)))
    names = list(sig.pysig.parameters)
    pos = [i for i, n in enumerate(names) if n.startswith(_POS)]
    kw = [i for i, n in enumerate(names) if not n.startswith(_POS)]
    return (tuple(sig.args[i] for i in pos), {names[i]: sig.args[i] for i in kw}, len(pos),
            pos + kw)


def _make_lowering(p: Primitive):
    def lower(context, builder, sig, args):
        return _lower_call(p, context, builder, sig, args)
    return lower


def _lower_call(p: Primitive, context, builder, sig, args, self_ptr=None, extra=None):
    pos, kws, n_pos, order = _split_sig(sig)
    sig_args, args = [sig.args[i] for i in order], [args[i] for i in order]
    extra = extra or {}
    bound = ()
    if p.infer:
        r, bound = resolve_object(p, pos, kws)
    else:
        r = resolve_call(p, pos, dict(kws, **{k: t for k, (t, _) in extra.items()}),
                         block_dims=p.parent.block_dims if p.parent else None)
    # Arguments a constructed object keeps are appended after the call's own, then the
    # constants the call passes without the user (SplitCall.constants).
    constants = split_call(p, pos, kws).constants if p.parent is None and not p.infer else []
    arg_types = (sig_args + [t for t, _ in extra.values()]
                 + [_constant_type_at_run_time(t) for t, _ in constants])
    arg_vals = (list(args) + [v for _, v in extra.values()]
                + [_constant_value(context, builder, t, v) for t, v in constants])
    n_call, n_kept = len(sig_args), len(extra)
    if p.parent is None:
        check_not_in_device_function(p, r, "threads_per_block" in kws or
                                      "threads_per_block" in p.fixed)
    if p.constructor:
        slot = cgutils.alloca_once(builder, ir.ArrayType(ir.IntType(8), PARENT_BYTES),
                                   name="coopgen_parent")
        slot.align = PARENT_ALIGN
        self_ptr = builder.bitcast(slot, ir.IntType(8).as_pointer())
    op_sigs = operator_signatures(p.name, r)
    bundle = bundle_for(context.active_code_library, p.name, module=builder.module)
    ts = r.temp_storage_arg[1] if r.temp_storage_arg else None
    if isinstance(ts, types.Array) and not isinstance(ts, SizedArray):
        align_numba_shared_bytes(builder.module)  # numba's cuda.shared.array(n, uint8)
    use_index = bundle.next_use_index(ts.obj.symbol) if isinstance(ts, TempStorageType) else 0
    text = shims.build(r, op_sigs, object_mode="construct" if p.constructor else
                       "method" if p.parent is not None else None,
                       object_bytes=PARENT_BYTES - 8 * len(bound), use_index=use_index)
    site = kernel_lowering_site()
    bundle.add(Shim(text.symbol, text.source_fn, text.includes, decls=text.decls,
                    block_storage=text.block_storage, temp_storage=text.ts_use,
                    warp_storage=text.warp_storage),
               site=site)
    use_short_shared_pointers(builder.module)
    if current_launch_config() is not None:
        bound_kernel_threads(builder, site, tuple(current_launch_config().blockdim))
    for i, sym, argtypes, restype in text.op_symbols:
        compile_operator(context, sym, r.bindings[i].operator, argtypes, restype, p.name)

    target = {b.arg_index: b.nbtype for b in r.bindings if b.source == "arg"}
    llargs, slots = [], []
    for ctype, name, source, index in text.c_params:
        if source == "self":
            llargs.append(self_ptr)
            continue
        if source == "ret":
            _, nbty, _ = r.returns[index]
            slot = cgutils.alloca_once(builder, context.get_data_type(nbty))
            slots.append((slot, nbty))
            llargs.append(slot)
            continue
        ty, val = arg_types[index], arg_vals[index]
        if n_call <= index < n_call + n_kept:  # a kept argument: already a data pointer
            llargs.append(builder.bitcast(val, ir.IntType(8).as_pointer()))
            continue
        if source == "state" and isinstance(ty, types.BaseTuple):  # (function, state array)
            ty, val = ty[1], builder.extract_value(val, 1)
        if isinstance(ty, types.Array):
            llargs.append(builder.bitcast(context.make_array(ty)(context, builder, val).data,
                                          ir.IntType(8).as_pointer()))
        elif isinstance(ty, types.Record):  # a record value is a pointer to its data
            llargs.append(builder.bitcast(val, ir.IntType(8).as_pointer()))
        elif is_struct(ty):  # a user-defined struct value: pass a copy by pointer
            slot = cgutils.alloca_once_value(builder, val)
            llargs.append(builder.bitcast(slot, ir.IntType(8).as_pointer()))
        elif isinstance(ty, types.Boolean) or types.unliteral(ty) == types.boolean:
            llargs.append(builder.zext(val, ir.IntType(8)))
        else:
            to = target.get(index) or types.unliteral(ty)
            llargs.append(context.cast(builder, val, ty, to))
    fnty = ir.FunctionType(ir.VoidType(), [a.type for a in llargs])
    fn = cgutils.get_or_insert_function(builder.module, fnty, text.symbol)
    builder.call(fn, llargs)
    vals = [context.data_model_manager[t].load_from_data_pointer(builder, s) for s, t in slots]
    if p.constructor:
        for k, (_, ty, index) in enumerate(bound):  # keep the bound arrays' data pointers
            data = context.make_array(ty)(context, builder, args[index]).data
            slot = builder.gep(self_ptr, [ir.Constant(ir.IntType(32), PARENT_BYTES - 8 * (k + 1))])
            builder.store(builder.bitcast(data, ir.IntType(8).as_pointer()),
                          builder.bitcast(slot, ir.IntType(8).as_pointer().as_pointer()))
        vals = [self_ptr] + vals
    if not vals:
        return context.get_dummy_value()
    if len(vals) == 1:
        return vals[0]
    return context.make_tuple(builder, sig.return_type, vals)


def _constant_type_at_run_time(ty):
    plain = types.unliteral(ty)
    return plain if isinstance(plain, (types.Number, types.Boolean)) else ty


def _constant_value(context, builder, ty, value):
    """The LLVM value of a fixed call argument: numbers as constants; operators (names,
    functions) carry no run-time value."""
    plain = types.unliteral(ty)
    if isinstance(plain, (types.Number, types.Boolean)):
        return context.get_constant(plain, value)
    return context.get_dummy_value()


# --- namespaces: block.BlockReduce, two-phase objects ---------------------------------------

class PrimitiveClass:
    """``block.BlockRadixSort`` (faithful surface): methods as attributes; called on the host
    with a dtype and template keywords it returns a two-phase object with those fixed."""

    def __init__(self, scope: str, cls: ClassSpec, fixed: dict | None = None):
        self._scope = scope
        self._cls = cls
        self._fixed = dict(fixed or {})
        self.__doc__ = registry.docstrings().get(f"{scope}.{cls.name}")
        self._methods = {name: Primitive(f"{scope}.{cls.name}.{name}", cls,
                                         {"": cls.overloads(name)}, fixed=self._fixed)
                         for name in cls.method_names}

    def __getattr__(self, name):
        methods = self.__dict__.get("_methods", {})
        if name in methods:
            return methods[name]
        raise AttributeError(f"{self.__dict__.get('_cls').name} has no method {name!r}")

    def __dir__(self):
        return list(self._methods) + ["temp_storage_bytes", "temp_storage_alignment"]

    @property
    def constructor(self) -> Primitive:
        """The in-kernel constructor (made once: each Primitive registers typing/lowering)."""
        ctor = self.__dict__.get("_ctor")
        if ctor is None:
            ctor = self.__dict__["_ctor"] = Primitive(
                f"{self._scope}.{self._cls.name}", self._cls, {"": self._cls.constructors},
                fixed=self._fixed, constructor=True)
        return ctor

    def __repr__(self):
        return f"<coopgen {self._scope}.{self._cls.name} {self._fixed or ''}>"

    def __call__(self, dtype=None, **template_kws):
        fixed = dict(self._fixed)
        if dtype is not None:
            fixed[self._cls.value_type.keyword] = dtype
        fixed.update(template_kws)
        check_host_keywords(f"{self._scope}.{self._cls.name}", self._cls, fixed, registry.enums())
        return PrimitiveClass(self._scope, self._cls, fixed)

    @property
    def temp_storage_bytes(self) -> int:
        from .layout import temp_storage_layout
        return temp_storage_layout(self._cls, self._fixed)[0]

    @property
    def temp_storage_alignment(self) -> int:
        from .layout import temp_storage_layout
        return temp_storage_layout(self._cls, self._fixed)[1]


class PrimitiveClassType(types.Callable, types.Opaque):
    """``block.BlockHistogram`` inside a kernel: its attributes are the methods (one-shot
    calls); calling it constructs a parent object (``h = block.BlockHistogram(...)``)."""

    def __init__(self, obj: PrimitiveClass):
        self.obj = obj
        self._ctor = obj.constructor
        super().__init__(f"coopgen.{obj._scope}.{obj._cls.name}@{id(obj):x}")

    @property
    def key(self):
        return id(self.obj)

    def get_call_type(self, context, args, kws):
        return self._ctor._nbtype.get_call_type(context, args, kws)

    def get_call_signatures(self):
        return [], True

    def get_impl_key(self, sig):
        return self._ctor


register_model(PrimitiveClassType)(OpaqueModel)


class ParentType(types.Type):
    """A constructed CUB object (BlockRunLengthDecode, BlockHistogram, ...) living in the
    calling thread's memory; the value is a pointer to it. Its methods are the class's."""

    def __init__(self, ctor: "Primitive", resolved: Resolved, template_kws: tuple,
                 bound: tuple = (), aliases: dict | None = None):
        self.cls = resolved.cls
        self.template_args = resolved.template_args
        self.block_dims = resolved.block_dims
        self.template_kws = template_kws
        self.ctor = ctor
        self.bound = bound  # (name, type) of arguments the object keeps (object factories)
        self.aliases = dict(aliases) if aliases else None  # snake_case name -> CUB method
        # CUB method -> its call shape (cuda.coop's names and order, pythonic.toml's
        # method_args), for objects of the Pythonic surface
        self.shapes = {}
        if self.aliases and ctor.shape is not None:
            self.shapes = {m: ctor.shape.with_slots(ctor.method_args[a])
                           for a, m in self.aliases.items() if a in ctor.method_args}
        args = ", ".join(v for _, v in resolved.template_args)
        super().__init__(f"coopgen.{self.cls.name}<{args}>"
                         + (f"[{', '.join(n for n, _ in bound)}]" if bound else ""))

    @property
    def key(self):
        return (self.cls.name, self.template_args, self.block_dims, self.bound,
                tuple(sorted(self.aliases.items())) if self.aliases else None,
                tuple(sorted((m, s.slots) for m, s in self.shapes.items())))

    def bound_offset(self, k: int) -> int:
        """Where the k-th kept argument's data pointer sits in the object slot (its tail)."""
        return PARENT_BYTES - 8 * (k + 1)


register_model(ParentType)(OpaqueModel)


@lower_cast(ParentType, ParentType)
def _cast_parent(context, builder, fromty, toty, val):
    return val  # the same object (bound-method lowering casts the receiver to itself)


#: Bytes reserved for a parent object in the constructing thread's frame; the constructor
#: shim static_asserts that the CUB class fits.
PARENT_BYTES, PARENT_ALIGN = 256, 16


@infer_getattr
class _ParentAttrs(AttributeTemplate):
    key = ParentType

    def generic_resolve(self, typ, attr):
        names = typ.aliases or {m: m for m in typ.cls.method_names}
        if attr not in names:
            raise CoopgenTypeError(f"{typ.cls.name} object has no method {attr!r}; methods: "
                                   f"{', '.join(names)}")
        return types.BoundFunction(_parent_method_template(typ.cls, names[attr]), typ)


def _parent_method_template(cls: ClassSpec, attr: str):
    key = f"coopgen.{cls.name}.{attr}"
    cached = _PARENT_METHODS.get(key)
    if cached is not None:
        return cached

    class ParentMethod(AbstractTemplate):
        prefer_literal = True

        def generic(self, args, kws):
            parent = self.this
            p = Primitive(f"{cls.scope}.{cls.name}.{attr}", cls, {"": cls.overloads(attr)},
                          fixed=dict(parent.template_kws), parent=parent,
                          shape=parent.shapes.get(attr))
            r = resolve_call(p, args, dict(kws, **_bound_kws(parent, attr)))
            RESOLVED.append(f"{r.cls.name}::{r.method.signature}")
            names = [f"{_POS}{i}" for i in range(len(args))] + list(kws)
            pysig = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD)
                                       for n in names])
            return signature(r.return_type, *(tuple(args) + tuple(kws.values())),
                             recvr=parent).replace(pysig=pysig)

    ParentMethod.key = key
    ParentMethod.__name__ = f"ParentMethod_{cls.name}_{attr}"

    @lower_builtin(key, ParentType, types.VarArg(types.Any))
    def lower(context, builder, sig, args):
        # numba passes the object first in ``args``; ``sig.args`` may or may not include it
        margs = sig.args[1:] if len(sig.args) == len(args) else sig.args
        parent = sig.recvr if sig.recvr is not None else sig.args[0]
        p = Primitive(f"{cls.scope}.{cls.name}.{attr}", cls, {"": cls.overloads(attr)},
                      fixed=dict(parent.template_kws), parent=parent,
                      shape=parent.shapes.get(attr))
        msig = signature(sig.return_type, *margs).replace(pysig=sig.pysig)
        extra = {}
        for k, (name, ty) in enumerate(parent.bound):
            if name in _bound_kws(parent, attr):
                slot = builder.gep(args[0], [ir.Constant(ir.IntType(32), parent.bound_offset(k))])
                ptr = builder.load(builder.bitcast(slot, ir.IntType(8).as_pointer().as_pointer()))
                extra[name] = (ty, ptr)
        return _lower_call(p, context, builder, msig, args[1:], self_ptr=args[0], extra=extra)

    _PARENT_METHODS[key] = ParentMethod
    return ParentMethod


_PARENT_METHODS: dict = {}


def _bound_kws(parent: ParentType, method: str) -> dict:
    """Kept arguments of an object the method takes, as keyword argument types."""
    names = {x.name for m in parent.cls.overloads(method) for x in m.params}
    return {n: t for n, t in parent.bound if n in names}


@typeof_impl.register(PrimitiveClass)
def _typeof_class(val, c):
    from .host_objects import as_argument
    return as_argument(val, c) or PrimitiveClassType(val)


@infer_getattr
class _PrimitiveClassAttrs(AttributeTemplate):
    key = PrimitiveClassType

    def generic_resolve(self, typ, attr):
        method = typ.obj._methods.get(attr)
        return method._nbtype if method is not None else None


@lower_getattr_generic(PrimitiveClassType)
def _lower_class_attr(context, builder, typ, value, attr):
    return context.get_dummy_value()
