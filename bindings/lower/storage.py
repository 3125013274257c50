"""``coopgen.TempStorage`` objects in kernels: a type whose value is nothing at run time (the
shims reach the storage by its symbol; numba lowers such constants as its dummy value)."""
from numba.cuda import types
from numba.cuda.datamodel.models import OpaqueModel
from numba.cuda.extending import register_model, typeof_impl

from ..codegen.storage import TempStorage


class TempStorageType(types.Opaque):
    def __init__(self, obj: TempStorage):
        self.obj = obj
        super().__init__(f"coopgen.TempStorage<{obj.symbol}>")

    @property
    def key(self):
        return self.obj.symbol


register_model(TempStorageType)(OpaqueModel)
typeof_impl.register(TempStorage)(lambda val, c: TempStorageType(val))
