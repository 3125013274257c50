"""A constructed CUB object in a kernel (BlockRunLengthDecode, BlockHistogram, ...): it lives in
the constructing thread's frame and its value is a pointer to it; its methods are the class's
(typed in coopgen.lower.objects)."""
from __future__ import annotations

from llvmlite import ir
from numba.cuda import types
from numba.cuda.core.imputils import lower_cast
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import register_model

#: Bytes reserved for a parent object in the constructing thread's frame; the constructor
#: shim static_asserts that the CUB class fits.
PARENT_BYTES, PARENT_ALIGN = 256, 16


class ParentType(types.Type):
    """Such an object's numba type; the value is a pointer to it."""

    def __init__(self, ctor, resolved, template_kws: tuple,
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


def bound_slot(builder, self_ptr, k: int):
    """Where the k-th kept argument's data pointer sits in the object (its tail), an i8**."""
    slot = builder.gep(self_ptr, [ir.Constant(ir.IntType(32), PARENT_BYTES - 8 * (k + 1))])
    return builder.bitcast(slot, ir.IntType(8).as_pointer().as_pointer())


register_model(ParentType)(OpaqueModel)


@lower_cast(ParentType, ParentType)
def _cast_parent(context, builder, fromty, toty, val):
    return val  # the same object (bound-method lowering casts the receiver to itself)
