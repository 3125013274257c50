"""The compilers coopgen serves, siblings below ``api``: ``lower`` (numba-cuda), ``mlir``
(numba-cuda-mlir) and ``cute`` (CuTe DSL). ``import coopgen`` imports the backend of each compiler installed, which
adds itself here; the objects users call (entry points, arrays, their classes) are plain Python
objects that ``api`` hands to every installed backend, each registering them with its own
compiler's typing and lowering. A kernel is so compiled by the backend of its compiler."""
#: The installed backends' ``backend`` modules: ``register(kind, obj, **info)``, ``PROVIDES``.
installed: list = []


def register(kind: str, obj, **info) -> None:
    """``kind``: "entry" (a Primitive), "entry_classes" (the classes whose instances kernels
    take as arguments), "array" (``local.array``/``shared.array``; ``space=``)."""
    for backend in installed:
        backend.register(kind, obj, **info)


#: What ``call_in_trace`` returns when no tracing compiler is tracing a kernel.
NOT_TRACING = object()


def call_in_trace(entry, args: tuple, kws: dict):
    """A call of ``entry`` made while a compiler that traces Python (CuTe DSL) traces a kernel:
    that backend emits it and returns what the call returns; otherwise NOT_TRACING (a host
    call, which makes a two-phase object)."""
    for backend in installed:
        trace = getattr(backend, "trace_call", None)
        if trace is not None and (out := trace(entry, args, kws)) is not NOT_TRACING:
            return out
    return NOT_TRACING


def tracing() -> bool:
    """Whether a compiler that traces Python is tracing a kernel now."""
    return any(getattr(b, "tracing", bool)() for b in installed)


def provided_by_each(name: str) -> list:
    """What each installed backend provides under ``name`` (a helper every compiler needs its
    own of: ``gpu_dataclass`` registers the class with each)."""
    return [b.PROVIDES[name] for b in installed if name in b.PROVIDES]


def provided(name: str):
    """A helper users import that its compiler implements (``coop.gpu_dataclass``): the first
    installed backend's that has it."""
    for backend in installed:
        if name in backend.PROVIDES:
            return backend.PROVIDES[name]

    def missing(*args, **kws):
        raise NotImplementedError(f"coopgen: {name} needs the numba-cuda backend "
                                  f"(pip install numba-cuda); installed: "
                                  f"{', '.join(b.NAME for b in installed) or 'none'}")
    missing.__name__ = name
    return missing
