"""cuda.coop's API on coopgen: cuda.coop kernels run after ``from coopgen import coop``.

``coop.block``/``coop.warp`` are coopgen's namespaces (which follow cuda.coop's names, argument
order and keywords) plus cuda.coop's ``make_*`` factories; containers and helpers are coopgen's
in cuda.coop's spelling. Only argument order is decided here (the backends' rewrites do the rest).
"""
import dataclasses as _dataclasses
import sys as _sys
import types as _pytypes

from . import block as _block
from . import local, shared  # noqa: F401
from . import groups as _groups
from . import warp as _warp
from ..codegen.storage import TempStorage as _TempStorage
from ..model import backends as _backends
from ..model import errors as _errors
from ..resolve.operators import StatefulFunction  # noqa: F401 (each backend compiles it)
from ..types.enums import ALGORITHMS as _ALGORITHMS

#: Positional order of cuda.coop's ``make_*`` factories, per scope: by function name, by name
#: suffix (``*_pairs``), else the scope's default. The factory passes them on as keywords, so
#: the function's own host order (``block.reduce(dtype, tpb, binary_op, ...)``) does not apply.
FACTORY_POSITIONALS = {
    "block": {
        "histogram": ("item_dtype", "counter_dtype", "dim", "items_per_thread", "bins"),
        "run_length": ("item_dtype", "dim", "runs_per_thread", "decoded_items_per_thread"),
        **dict.fromkeys(("*_pairs", "*_pairs_descending"),
                        ("dtype", "value_dtype", "threads_per_block", "items_per_thread")),
        "*": ("dtype", "threads_per_block", "items_per_thread"),
    },
    "warp": {
        "reduce": ("dtype", "binary_op", "threads_in_warp"),
        **dict.fromkeys(("exclusive_scan", "inclusive_scan"),
                        ("dtype", "scan_op", "threads_in_warp")),
        **dict.fromkeys(("sum", "max", "min", "exclusive_sum", "inclusive_sum"),
                        ("dtype", "threads_in_warp")),
        "merge_sort_keys": ("dtype", "items_per_thread", "compare_op", "value_dtype",
                            "threads_in_warp"),
        "merge_sort_pairs": ("dtype", "value_dtype", "items_per_thread", "compare_op",
                             "threads_in_warp"),
        "*_pairs": ("dtype", "value_dtype", "items_per_thread", "threads_in_warp"),
        "*": ("dtype", "items_per_thread", "threads_in_warp"),
    },
}
#: The operator arguments a factory may take where items_per_thread is (_operator_before_items).
OPERATOR_SLOTS = ("binary_op", "scan_op", "compare_op", "difference_op", "flag_op")
#: Factories that take no temp_storage= (cuda.coop raises NotImplementedError for them).
NO_EXPLICIT_STORAGE = ("histogram",)
NO_STORAGE_WHY = ("Explicit temp_storage is not supported for {0}. (cuda.coop's API has "
                  "none; coopgen.block.{0} takes one.)")
#: Arguments cuda.coop requires where CUB's output could be returned but its type not inferred.
REQUIRED = {"block.run_length": {"total_decoded_size": (
    "coop.block.run_length requires at least 5 positional arguments (run_values, run_lengths, "
    "runs_per_thread, decoded_items_per_thread, total_decoded_size): total_decoded_size must "
    "be a device array, of 1 item receiving the decoded size (its dtype is C++'s "
    "TotalDecodedSizeT)")}}


#: cuda.coop.numba_mlir's single-phase calls (``coop._block.*``, ``coop._warp.*``; see
#: CallShape.declared): the arguments ``name=True`` declares as passed positionally, and the
#: keywords that name a dtype when given one rather than an array.
SINGLE_PHASE_DECLARED = frozenset({"valid_items", "tile_predecessor_item", "tile_successor_item"})
SINGLE_PHASE_DTYPES = {"keys": "dtype", "key_dtype": "dtype", "values": "value_dtype"}
#: Their ``offset=n``: the global array passed (their first argument) is read from item n on.
SINGLE_PHASE_OFFSET = ("load", "store")


def factory_positionals(scope: str, name: str) -> tuple[str, ...]:
    table = FACTORY_POSITIONALS[scope]
    if name in table:
        return table[name]
    return table[max((k for k in table if k[0] == "*" and name.endswith(k[1:])), key=len)]


def _operator_before_items(positional: tuple, args: tuple, function) -> tuple:
    """``positional`` with the operator before items_per_thread where an operator is in its slot:
    cuda.coop's ``make_reduce(dtype, threads, op)`` beside ``make_exclusive_scan(dtype, threads,
    items_per_thread, op)``."""
    if "items_per_thread" not in positional:
        return positional
    i = positional.index("items_per_thread")
    ops = [n for n in positional[i + 1:] if n in OPERATOR_SLOTS]
    if i >= len(args) or not ops or not (callable(args[i]) or isinstance(args[i], str)):
        return positional
    rest = [n for n in positional[i:] if n != ops[0]]
    return positional[:i] + (ops[0],) + tuple(rest)


def _factory(scope: str, name: str, function):
    # then the rest of the function's own host order (make_load(dtype, tpb, ipt, "striped"))
    first = factory_positionals(scope, name)
    positional = first + tuple(n for n in (getattr(function, "host", None) or ())
                               if n not in first)

    def make(*args, **kws):
        if name in NO_EXPLICIT_STORAGE and "temp_storage" in kws:
            raise NotImplementedError(NO_STORAGE_WHY.format(name))
        if len(args) > len(positional):
            raise TypeError(f"coop.{scope}.make_{name}: takes at most {len(positional)} "
                            f"positional arguments ({', '.join(positional)}), got {len(args)}")
        names = _operator_before_items(positional, args, function)
        for key, value in zip(names, args):
            if key in kws:
                raise TypeError(f"coop.{scope}.make_{name}: {key} given twice")
            kws[key] = value
        return function(**kws)

    make.__name__ = make.__qualname__ = f"make_{name}"
    make.__doc__ = (f"cuda.coop's factory ({', '.join(positional)}, then keywords): the "
                    f"two-phase ``{scope}.{name}`` object (call it in kernels; ``.files`` "
                    f"links nothing: each kernel links the code it uses).")
    return make


def _cuda_coop_semantics(value):
    """cuda.coop's semantics where they differ from CUB's, in a copy (coopgen.block's own keeps
    CUB's): scans of Python operators without an initial value start from 0; a histogram takes
    no explicit temp storage; run_length needs total_decoded_size."""
    if not isinstance(value, Invocable) or value.shape is None:
        return value
    refused = {"temp_storage": NO_STORAGE_WHY.format(name)
               for name in NO_EXPLICIT_STORAGE if value.name.endswith(f".{name}")}
    if not value.shape.identity and not refused and value.name not in REQUIRED:
        return value
    return _dataclasses.replace(value, shape=_dataclasses.replace(value.shape, python_zero=True),
                                refused=refused, required=REQUIRED.get(value.name))


def _namespace(scope: str, module) -> _pytypes.ModuleType:
    ns = _pytypes.ModuleType(f"coopgen.coop.{scope}", module.__doc__)
    # no cub::detail, no free functions (cuda.coop has none)
    public = {k: _cuda_coop_semantics(v) for k, v in vars(module).items()
              if not k.startswith("_") and not getattr(getattr(v, "_cls", None), "unstable", 0)
              and not getattr(getattr(v, "cls", None), "function", False)}
    ns.__dict__.update(public)
    for name, value in public.items():
        if name[:1].islower() and callable(value):
            setattr(ns, f"make_{name}", _factory(scope, name, value))
    ns.__all__ = sorted(k for k in vars(ns) if not k.startswith("_"))
    return ns


#: cuda.coop's base class of two-phase objects (``isinstance(obj, Invocable)``).
from .primitives import Primitive as Invocable  # noqa: E402

block = _namespace("block", _block)
warp = _namespace("warp", _warp)
# cuda.coop's group-first API: coop.this_block(), coop.sum(group, x), ... (coopgen.api.groups)
def _group_target(name: str):
    """A group call's target: a Pythonic function with cuda.coop's semantics
    (``block.sum``), or a faithful method (``block.BlockHistogram.Histogram``)."""
    scope, *path = name.split(".")
    obj = {"block": block, "warp": warp}[scope] if len(path) == 1 else \
        {"block": _block, "warp": _warp}[scope]
    for attr in path:
        obj = getattr(obj, attr)
    return obj


_group_api = _groups.build(_group_target)
globals().update(_group_api)
ThreadGroup = _groups.Group


class ThreadHierarchy:
    """cuda.coop's description of the launch hierarchy: in coopgen the block shape comes from
    each launch (a kernel is specialised per block shape), so on the host nothing is static."""
    block_dim = grid_dim = cluster_dim = None
    implicit = True
    is_static = False
    block_thread_count = None

    @classmethod
    def current(cls) -> "ThreadHierarchy":
        return cls()


Hierarchy = ThreadHierarchy
ThreadDataLike = TempStorageLike = object  # typing names of cuda.coop's stubs
__version__ = _sys.modules[__name__.split(".")[0]].__version__  # set before api imports


def register(backend: str = "numba_cuda_mlir") -> None:
    """cuda.coop's backend activation: coopgen's backends register on import, so this only
    checks the name (numba-cuda-mlir, or numba-cuda: coopgen serves both)."""
    if backend.replace("-", "_") not in ("numba_cuda_mlir", "numba_cuda"):
        raise ValueError(f"coop.register: unknown backend {backend!r}; allowed: "
                         f"'numba-cuda-mlir', 'numba_cuda_mlir', 'numba-cuda'")
# cuda.coop's submodules, importable as such: ``from coopgen.coop.block import
# BlockAdjacentDifferenceType``, ``from coopgen.coop._types import Invocable``
_types = _pytypes.ModuleType("coopgen.coop._types", "cuda.coop's base class of two-phase objects")
_types.Invocable = Invocable
for _sub in (block, warp, _types):
    _sys.modules[_sub.__name__] = _sub
# cuda.coop's algorithm enums (coop.BlockLoadAlgorithm, ...); the *Type enums of the selectors
# are in the namespaces (coop.block.BlockExchangeType).
globals().update(_ALGORITHMS)


def gpu_dataclass(instance, *, compute_temp_storage=True):
    """A dataclass instance as a kernel argument, for each compiler installed: on numba-cuda
    its fields are compile-time constants (primitives among them callable); on numba-cuda-mlir
    its fields, numbers all, travel as one record (the kernel's ``cuda.jit`` takes
    ``extensions=[coop.gpu_dataclass_argument_handler]``). With ``compute_temp_storage``, it
    gains ``temp_storage_bytes_sum``/``_max`` and ``temp_storage_alignment``."""
    makers = _backends.provided_by_each("gpu_dataclass")
    if not makers:
        return _backends.provided("gpu_dataclass")(instance)
    for make in makers:
        instance = make(instance, compute_temp_storage=compute_temp_storage)
    return instance


class _DataclassArguments:
    """The argument handler of gpu_dataclass instances (``cuda.jit(extensions=[...])``): each
    compiler's, which leave other arguments alone."""

    def prepare_args(self, ty, val, stream=0, retr=None):
        for handler in _backends.provided_by_each("gpu_dataclass_argument_handler"):
            ty, val = handler.prepare_args(ty, val, stream=stream, retr=retr)
        return ty, val


gpu_dataclass_argument_handler = _DataclassArguments()


def TempStorage(size_in_bytes=None, alignment=None, auto_sync=None, sharing="shared"):
    """Shared temp storage for several primitive calls (cuda.coop's argument order), made
    inside a kernel or on the host. Size and alignment are inferred from its uses; when given,
    they are checked against them. See coopgen.TempStorage."""
    return _TempStorage(sharing, size=size_in_bytes, alignment=alignment, auto_sync=auto_sync)


TempStorage._coopgen_host_call = True  # called on the host when its arguments are constants


def ThreadData(items_per_thread, dtype=None):
    """A per-thread array of ``items_per_thread`` items, inside a kernel. Without ``dtype`` it
    takes the dtype of the array its first primitive call uses with it (numba's kernels)."""
    out = _backends.call_in_trace(ThreadData, (items_per_thread, dtype), {})
    if out is _backends.NOT_TRACING:
        raise NotImplementedError("coop.ThreadData can only be called inside a kernel")
    return out


ThreadData._coopgen_thread_data = True


class Decomposer:
    """cuda.coop declares decomposers but no primitive takes one; neither does this. (coopgen's
    own radix sorts take a record key's field names as ``decomposer=("a", "b")``.)"""

    def __init__(self, op, ret_dtype):
        self.op = op
        self.ret_dtype = ret_dtype

    _coopgen_rejected = ("coop.Decomposer: radix sort does not take a decomposer object; "
                         "pass the record key's field names instead, e.g. "
                         "decomposer=(\"a\", \"b\")")


class NoAlgorithm:
    """cuda.coop's marker for primitives that have no algorithm choice."""


__all__ = ["block", "warp", "local", "shared", "TempStorage", "ThreadData", "Decomposer",
           "Invocable", "NoAlgorithm", "gpu_dataclass", "gpu_dataclass_argument_handler",
           "StatefulFunction", *sorted(_ALGORITHMS),
           *sorted(_group_api), "ThreadGroup", "ThreadHierarchy", "Hierarchy", "register"]

# cuda.coop's qualified namespace (``import cuda.coop.numba_mlir as coop``): the group-first
# calls and containers, cuda.coop's single-phase namespaces as ``_block``/``_warp``, and the
# memory namespaces. The same for both numba compilers in coopgen.
numba_mlir = _pytypes.ModuleType("coopgen.coop.numba_mlir", __doc__)
numba_mlir.__dict__.update({k: globals()[k] for k in __all__ if k not in ("block", "warp")})
def _single_phase(value):
    """A function of ``_block``/``_warp``: cuda.coop.numba_mlir's argument rules."""
    if not isinstance(value, Invocable) or value.shape is None or value.shape.slots is None:
        return value
    return _dataclasses.replace(value, shape=_dataclasses.replace(
        value.shape, declared=SINGLE_PHASE_DECLARED, dtype_keywords=SINGLE_PHASE_DTYPES,
        offset_first=value.name.split(".")[-1] in SINGLE_PHASE_OFFSET))


for _name, _scope in (("_block", block), ("_warp", warp)):  # with the algorithm enums
    _sub = _pytypes.ModuleType(f"coopgen.coop.numba_mlir.{_name}", _scope.__doc__)
    _sub.__dict__.update({k: _single_phase(v) for k, v in vars(_scope).items()
                          if not k.startswith("__")}, **_ALGORITHMS)
    _sys.modules[_sub.__name__] = _sub
    setattr(numba_mlir, _name, _sub)
#: Calls only the qualified namespace has, under another name: {name: the root call's name}.
QUALIFIED_ALIASES = {"radix_rank_keys": "radix_rank"}
for _name, _root in QUALIFIED_ALIASES.items():
    setattr(numba_mlir, _name, _groups.GroupCall(_name, _groups.ROUTES[_root], _group_target,
                                                 _group_api[_root].__doc__))
numba_mlir.__dict__.update(ThreadDataLike=ThreadDataLike, TempStorageLike=TempStorageLike,
                           __version__=__version__, __file__=__file__)
numba_mlir.__all__ = sorted(k for k in vars(numba_mlir) if not k.startswith("__"))
_sys.modules[numba_mlir.__name__] = numba_mlir


def _shared_memory_limits() -> dict:
    """The current device's shared memory a block may have by default and by opting in."""
    try:
        from numba_cuda_mlir import cuda
    except ImportError:
        from numba import cuda
    device = cuda.get_current_device()
    return {"max_default_shared_memory_per_block": device.MAX_SHARED_MEMORY_PER_BLOCK,
            "max_optin_shared_memory_per_block": device.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN}


# the names cuda.coop's tests import from its compiler's module: coopgen's compile-time error
# (raised as the compiler's TypingError) and the device's shared memory limits
_rewrites = _pytypes.ModuleType("coopgen.coop.numba_mlir._single_phase_rewrites")
_rewrites.__dict__.update(CoopSinglePhaseRewriteError=_errors.CoopgenError,
                          _query_device_shared_memory_limits=_shared_memory_limits)
_sys.modules[_rewrites.__name__] = _rewrites
