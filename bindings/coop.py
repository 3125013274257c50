"""cuda.coop's API on coopgen: existing cuda.coop kernels run after changing one import,

    from coopgen import coop          # instead of: from cuda import coop

``coop.block`` / ``coop.warp`` are coopgen's own namespaces (which follow cuda.coop's names,
argument order and keywords) plus cuda.coop's ``make_*`` factories; the containers
(``local``, ``shared``, ``ThreadData``, ``TempStorage``) and helpers are coopgen's, in
cuda.coop's spelling. Nothing here has logic of its own beyond argument order: sizes read from
kernel arguments, in-kernel objects and ``prim[temp_storage]`` are coopgen.rewrite's.
"""
from __future__ import annotations

import types as _pytypes

from . import block as _block
from . import local, shared  # noqa: F401
from . import warp as _warp
from .host_objects import gpu_dataclass  # noqa: F401
from .operators import StatefulFunction  # noqa: F401
from .rewrite import host_constructed
from .storage import TempStorage as _TempStorage

#: Host factories whose positional arguments cuda.coop orders differently from the function of
#: the same name: the names, in cuda.coop's order, they are passed on as.
FACTORY_POSITIONALS = {
    "histogram": ("item_dtype", "counter_dtype", "dim", "items_per_thread", "bins"),
}
#: Factories that take no temp_storage= (cuda.coop raises NotImplementedError for them).
NO_EXPLICIT_STORAGE = ("histogram",)


def _factory(scope: str, name: str, function):
    positional = FACTORY_POSITIONALS.get(name)

    def make(*args, **kws):
        if name in NO_EXPLICIT_STORAGE and "temp_storage" in kws:
            raise NotImplementedError(f"Explicit temp_storage is not supported for {name}.")
        if positional is not None:
            if len(args) > len(positional):
                raise TypeError(f"coop.{scope}.make_{name}: takes at most {len(positional)} "
                                f"positional arguments ({', '.join(positional)}), got "
                                f"{len(args)}")
            for key, value in zip(positional, args):
                if key in kws:
                    raise TypeError(f"coop.{scope}.make_{name}: {key} given twice")
                kws[key] = value
            args = ()
        return function(*args, **kws)

    make.__name__ = make.__qualname__ = f"make_{name}"
    make.__doc__ = (f"cuda.coop's factory: the two-phase ``{scope}.{name}`` object (call it in "
                    f"kernels; ``.files`` is empty, there is nothing to link).")
    return make


def _namespace(scope: str, module) -> _pytypes.ModuleType:
    ns = _pytypes.ModuleType(f"coopgen.coop.{scope}", module.__doc__)
    public = {k: v for k, v in vars(module).items() if not k.startswith("_")}
    ns.__dict__.update(public)
    for name, value in public.items():
        if name[:1].islower() and callable(value):
            setattr(ns, f"make_{name}", _factory(scope, name, value))
    ns.__all__ = sorted(k for k in vars(ns) if not k.startswith("_"))
    return ns


block = _namespace("block", _block)
warp = _namespace("warp", _warp)


@host_constructed
def TempStorage(size_in_bytes=None, alignment=None, auto_sync=None, sharing="shared"):
    """Shared temp storage for several primitive calls (cuda.coop's argument order), made
    inside a kernel or on the host. Size and alignment are inferred from its uses; when given,
    they are checked against them. See coopgen.TempStorage."""
    return _TempStorage(sharing, size=size_in_bytes, alignment=alignment, auto_sync=auto_sync)


def ThreadData(items_per_thread, dtype=None):
    """A per-thread array of ``items_per_thread`` items, inside a kernel. Without ``dtype`` it
    takes the dtype of the array its first primitive call uses with it."""
    raise NotImplementedError("coop.ThreadData can only be called inside a kernel")


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
           "NoAlgorithm", "gpu_dataclass", "StatefulFunction"]
