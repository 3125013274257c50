"""``coopgen.torch.custom_op``: a function that launches coopgen kernels, registered as a
``torch.library`` custom op whose fake implementation comes from a declared output spec, so
``torch.compile(fullgraph=True)`` traces it as one opaque op and CUDA graphs capture its
launches (they go to PyTorch's current stream)."""
from __future__ import annotations

import inspect

#: qualified name -> the registered op (registering a name twice is torch.library's error)
_ops: dict = {}


class Like:
    """An output of the shape, dtype and device of the argument ``of`` (a name or position),
    with ``dtype`` or ``shape`` (a function of the arguments) instead where given."""

    def __init__(self, of, dtype=None, shape=None):
        self.of, self.dtype, self.shape = of, dtype, shape

    def fake(self, torch, bound: inspect.BoundArguments):
        names = list(bound.signature.parameters)
        name = names[self.of] if isinstance(self.of, int) else self.of
        if name not in bound.arguments:
            raise TypeError(f"coopgen.torch: the output spec names {self.of!r}, which is no "
                            f"argument of ({', '.join(names)})")
        ref = bound.arguments[name]
        shape = ref.shape if self.shape is None else self.shape(**bound.arguments)
        return torch.empty(shape, dtype=self.dtype or ref.dtype, device=ref.device)


def like(of, dtype=None, shape=None) -> Like:
    return Like(of, dtype, shape)


def custom_op(qualname: str, fn=None, *, outputs, mutates_args=(), checks=None,
              device_types="cuda"):
    """Register ``fn`` (annotated with torch types, as torch.library asks) as the op
    ``torch.ops.<namespace>.<name>``; returns the op. ``outputs``: a :func:`like` spec, a tuple
    of them, or a function of the (fake) arguments returning the outputs. ``checks``: a function
    of the arguments run by the fake implementation (``torch._check``) to refuse what the
    kernel refuses. Usable as a decorator when ``fn`` is left out."""
    if fn is None:
        return lambda f: custom_op(qualname, f, outputs=outputs, mutates_args=mutates_args,
                                   checks=checks, device_types=device_types)
    if qualname in _ops:
        return _ops[qualname]
    import torch
    op = torch.library.custom_op(qualname, fn, mutates_args=mutates_args,
                                 device_types=device_types)
    signature = inspect.signature(fn)

    def fake(*args, **kwargs):
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        if checks is not None:
            checks(**bound.arguments)
        if callable(outputs) and not isinstance(outputs, Like):
            return outputs(**bound.arguments)
        if isinstance(outputs, tuple):
            return tuple(o.fake(torch, bound) for o in outputs)
        return outputs.fake(torch, bound)

    op.register_fake(fake)
    _ops[qualname] = op
    return op
