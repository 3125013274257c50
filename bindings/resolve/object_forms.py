"""The shared rewrite's forms of calls of coopgen's objects that cuda.coop writes: a two-phase
object's fused method made on the host (coopgen.api.twophase.FusedCall), and per-thread counts
given as constants that are not positive ints (refused before typing, in cuda.coop's words)."""
import numpy as np

from ..model.errors import CoopgenError
from .entry import Entry


class ObjectForms:
    """Part of coopgen.resolve.kernel_ir.CallRewrite (its ``ir``, ``trace``, ``error``)."""

    def _positive_counts(self, callee, expr):
        """A per-thread count a call gives as a constant is a positive int (cuda.coop's
        words): a float or a bool is not taken as one."""
        if not isinstance(callee, Entry) or callee.shape is None or callee.shape.slots is None:
            return
        try:
            named = callee.shape.name_arguments(tuple(expr.args), dict(expr.kws))
        except CoopgenError:  # typing names the arguments' error
            return
        for name, var, _ in named:
            name = name if isinstance(name, str) else name[0]
            value = self.trace.value(var)[0] if name.endswith("per_thread") else None
            if isinstance(value, (bool, np.bool_, float, np.floating)) or isinstance(
                    value, (int, np.integer)) and value < 1:
                raise self.error(f"{callee.name}: {name} must be a compile-time positive "
                                 f"integer, got {value!r}")

    def _fused_call(self, new, stmt, fused):
        """``fused(constructor's arguments, method's arguments, temp_storage=ts)`` ->
        ``parent(..., temp_storage=ts).method(...)`` (coopgen.api.twophase.FusedCall)."""
        expr, loc = stmt.value, stmt.loc
        kws = dict(expr.kws)
        if len(expr.args) > len(fused.slots) or set(kws) - set(fused.slots) - {"temp_storage"} \
                or set(kws) & set(fused.slots[:len(expr.args)]):
            raise self.error(f"{fused.label}: takes ({', '.join(fused.slots)}, "
                             f"temp_storage=None); got {len(expr.args)} positional arguments "
                             f"and {sorted(kws)}")
        kws.update(zip(fused.slots, expr.args))
        if missing := [n for n in fused.slots if n not in kws]:
            raise self.error(f"{fused.label}: missing argument {missing[0]!r}")
        parent = self._define(new, self.ir.Global("coopgen_parent", fused.owner, loc), loc)
        obj = self._define(new, self.ir.Expr.call(parent, [], [(k, kws[k]) for k in (
            *fused.slots[:fused.constructor_slots], "temp_storage") if k in kws], loc), loc)
        method = self._define(new, self.ir.Expr.getattr(obj, fused.alias, loc), loc)
        args = [kws[n] if n else self._define(new, self.ir.Const(int(default), loc), loc)
                for n, default in fused.method_call]
        self._drop_callee(expr.func)
        self._replace_value(stmt, self.ir.Expr.call(method, args, (), loc))
