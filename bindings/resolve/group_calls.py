"""The IR rewrite of cuda.coop's group-first calls (coopgen.resolve.groups), shared by the
backends: ``coop.sum(block, x)`` becomes the call of the entry point its route names, with the
arrays, copies, broadcasts and query helpers (coopgen.resolve.group_helpers) the route asks
for. Groups are host values: a variable holding one is read where ``this_block()`` and the
like made it, and its calls are rewritten away, so no group reaches typing."""
import operator

import numpy as np

from ..model.errors import CoopgenError
from . import group_helpers
from .groups import Constant, check_bit_range
from .kernel_ir import UNKNOWN, CallRewrite, is_op, plain


class GroupCallRewrite(CallRewrite):
    """A backend's rewrite, with group calls; it names its compiler's ``cuda`` module
    (``cuda_module``) for the helpers."""
    cuda_module = None
    trap = None  # the backend's device trap (a function its kernels can call)
    ptx = None  # ptx(text, returns): the backend's device function of one PTX statement

    def __init_subclass__(cls, **kws):
        """A backend's cluster registers, made with the backend (its typing knows them)."""
        super().__init_subclass__(**kws)
        if cls.ptx is not None:
            cls.cluster = {name: cls.ptx(*statement)
                           for name, statement in group_helpers.CLUSTER_PTX.items()}

    def rewrite_call(self, new, stmt, index) -> bool:
        callee = self.trace.callee(stmt.value.func)
        if getattr(callee, "_coopgen_group_call", False):
            self._group_call(new, stmt, callee)
            return True
        fdef = self.trace.definition(stmt.value.func)
        method_of = self.group_of(fdef.value) if is_op(self.ir, fdef, "getattr") else None
        if getattr(callee, "_coopgen_group_factory", False) or (
                method_of is not None and fdef.attr == "group_by"):
            # made now, on the host; the variable types as nothing and its uses are rewritten
            func = stmt.value.func
            self._groups()[stmt.target.name] = self._made_group(stmt.value)
            self._replace_value(stmt, self.ir.Const(None, stmt.loc))
            if method_of is not None:
                self._redefine(fdef, self.ir.Const(None, fdef.loc))
            else:
                self._drop_callee(func)
            return True
        if method_of is not None:
            self._group_query(new, stmt, method_of, fdef)
            return True
        return super().rewrite_call(new, stmt, index)

    def _groups(self) -> dict:
        """The function's groups, by the variables that hold them."""
        return self.func_ir.__dict__.setdefault("_coopgen_groups", {})

    #: per backend class, its helpers (made once: each is a device function)
    _helpers: dict = {}
    #: helpers that call a primitive (run_length_decode_into's loop): a backend whose device
    #: functions cannot link a primitive's shim lists the calls' results here and inlines them
    inline_calls: list | None = None

    def _helper(self, new, name: str, loc):
        helpers = GroupCallRewrite._helpers.get(type(self))
        if helpers is None:
            helpers = GroupCallRewrite._helpers[type(self)] = group_helpers.for_backend(
                self.cuda_module, self.device_function, self.trap, self.cluster)
        return self._define(new, self.ir.Global(name, helpers[name], loc), loc)

    def _call_helper(self, new, name: str, args, loc, calls_primitive=False):
        var = self._define(new, self.ir.Expr.call(self._helper(new, name, loc), list(args),
                                                   (), loc), loc)
        if calls_primitive and self.inline_calls is not None:
            self.inline_calls.append(var.name)
        return var

    def group_of(self, var):
        """The group a variable holds (through copies of it), or None."""
        known, name = self._groups(), var.name
        while name not in known:
            defs = self.func_ir._definitions.get(name, ())
            if len(defs) != 1:
                return None
            d = defs[0]
            if is_op(self.ir, d, "call"):
                group = self._made_group(d)
                if group is not None:
                    known[name] = group
                return group
            if isinstance(d, self.ir.glob) and getattr(d.value, "_coopgen_group", False):
                known[name] = d.value  # made on the host (a module's group): typed as nothing
                self._redefine(d, self.ir.Const(None, d.loc))
                return d.value
            if isinstance(d, self.ir.expr + self.ir.const + self.ir.glob + self.ir.arg) or \
                    not isinstance(getattr(d, "name", None), str):
                return None
            name = d.name  # a copy of another variable
        return known[name]

    def _made_group(self, d):
        """The group a call expression makes (``this_block()``, ``g.group_by(16)``), now."""
        fdef = self.trace.definition(d.func)
        parent = self.group_of(fdef.value) if is_op(self.ir, fdef, "getattr") else None
        if parent is not None:
            func = getattr(parent, fdef.attr, None)
            if not getattr(func, "_coopgen_host_call", False):  # group_by, not a query
                return None
        else:
            func = self.trace.callee(d.func)
            if not getattr(func, "_coopgen_group_factory", False):
                return None
        values = [self.trace.value(a)[0] for a in d.args]
        kws = {k: self.trace.value(v)[0] for k, v in d.kws}
        if UNKNOWN in values or UNKNOWN in kws.values():
            raise self.error(f"{getattr(func, '__qualname__', func)}: its arguments must be "
                             f"known when the kernel compiles ({self.known_values})")
        try:
            return func(*map(plain, values), **{k: plain(v) for k, v in kws.items()})
        except CoopgenError as e:
            raise self.error(str(e)) from None

    def _value_of(self):
        """A variable's host value (``UNKNOWN`` if none); its ``fixed`` leaves out the values
        numba-cuda reads from the launch's arguments (run-time values to the kernel)."""
        def value_of(var):
            return self.trace.value(var)[0]

        def fixed(var):
            value, from_launch = self.trace.value(var)
            return UNKNOWN if from_launch else value
        value_of.fixed = fixed
        return value_of

    def _is_thread_array(self, var) -> bool:
        """Whether ``var`` is a per-thread array made in this function (a ThreadData, a local
        array, a group call's result), not a scalar."""
        return self._array_shape(var) is not None

    def _array_shape(self, var, seen=()):
        """The item count of the per-thread array ``var`` holds (the same on every path that
        defines it), or None: not such an array, or not known."""
        if var.name in seen:
            return None
        shapes = {self._shape_of(d, seen + (var.name,))
                  for d in self.func_ir._definitions.get(var.name, ())}
        return shapes.pop() if len(shapes) == 1 else None

    def _shape_of(self, d, seen):
        ir = self.ir
        if isinstance(d, ir.expr) and d.op == "cast":
            return self._array_shape(d.value, seen)
        if not isinstance(d, ir.expr + ir.const + ir.glob + ir.arg) and isinstance(
                getattr(d, "name", None), str):
            return self._array_shape(d, seen)  # a copy of another variable
        if is_op(ir, d, "static_getitem"):  # one of a pair call's results
            items = self.trace.definition(d.value)
            if is_op(ir, items, "exhaust_iter"):
                items = self.trace.definition(items.value)
            if is_op(ir, items, "build_tuple") and isinstance(d.index, int):
                return self._array_shape(items.items[d.index], seen)
            if is_op(ir, items, "call") and getattr(self._called(items.func),
                                                    "_coopgen_group_call", False):
                return self._group_result_shape(items, seen)
        if not is_op(ir, d, "call"):
            return None
        callee = self._called(d.func)
        if getattr(callee, "_coopgen_group_call", False):
            return self._group_result_shape(d, seen)
        array = getattr(callee, "__qualname__", "") in ("local.array", "local.thread_data") \
            or getattr(callee, "_coopgen_thread_data", False) \
            or callee is self.arrays.get("local") or callee is self.arrays.get("thread_data")
        if not array:
            return None
        shape = d.args[0] if d.args else dict(d.kws).get("shape", dict(d.kws).get(
            "items_per_thread"))
        value = self.trace.value(shape)[0] if shape is not None else UNKNOWN
        return value if value is not UNKNOWN else None

    def _group_result_shape(self, d, seen):
        """A group call not rewritten yet: its result arrays are its first array's size, or
        the constant its route's ``size_from`` names (reduce_batched's: one a lane's batch)."""
        call, kws = self._called(d.func), dict(d.kws)
        group = self.group_of(d.args[0]) if d.args else None
        route = call.routes.get(group.family) if group is not None else None
        if route is not None and route.size_from is not None:
            size = kws.get(route.size_from)
            value = self.trace.value(size)[0] if size is not None else 1
            return None if value is UNKNOWN else value
        shape = self._array_shape(d.args[1], seen) if len(d.args) > 1 else None
        if call.name == "reduce_batched" and shape is not None:
            return -(-shape // (group.threads_in_warp or 32)) if group is not None else None
        return shape

    def _like(self, new, var, loc, dtype: str | None = None, per: int | None = None):
        """A new per-thread array of ``var``'s shape (one slot per ``per`` items when given)
        and dtype (``dtype``, a numpy name, when given)."""
        shape = self._array_shape(var)
        if shape is None:
            raise self.error(f"a new array like {var.name!r} needs its size: make it with "
                             f"coop.ThreadData(n) or a local array of a constant size")
        if per is not None:
            shape = -(-shape // per)
        dtype = self._dtype(new, dtype, loc) if dtype else self._attribute(new, var, "dtype", loc)
        return self._array(new, "local", shape, dtype, loc)

    def _new_output(self, new, plan, like, loc):
        """A result array: ``like``'s shape (a batched reduction's: one slot per ``width``
        items) and dtype (or the route's)."""
        return self._like(new, like, loc, plan.output_dtype,
                          plan.width if plan.output_size == "batched" else None)

    def _dtype(self, new, dtype, loc):
        return self._define(new, self.ir.Global(dtype, getattr(np, dtype), loc), loc)

    def _attribute(self, new, var, name: str, loc):
        return self._define(new, self.ir.Expr.getattr(var, name, loc), loc)

    def _array(self, new, space, shape, dtype, loc):
        size = self._define(new, self.ir.Const(shape, loc), loc)
        func = self._array_function(new, self.arrays[space], loc)
        return self._define(new, self.ir.Expr.call(func, [size, dtype], (), loc), loc)

    def _call_entry(self, new, entry, kws: dict, loc):
        target = self._define(new, self.ir.Global(entry.name.replace(".", "_"), entry, loc),
                              loc)
        return self._define(new, self.ir.Expr.call(target, [], tuple(kws.items()), loc), loc)

    def _histogram(self, new, plan, kws, loc):
        """cuda.coop's histogram: CUB's counts in a shared array of ``bins`` (of the dtype CUB
        counts in), read back striped into ``bins_per_thread`` counters a thread."""
        extra = dict(plan.extra_constants)
        counters = self._dtype(new, extra["counted_dtype"], loc)
        shared = self._array(new, "shared", extra["bins"], counters, loc)
        self._call_entry(new, plan.target, dict(kws, histogram=shared), loc)
        out = self._array(new, "local", extra["bins_per_thread"], self._dtype(
            new, extra["counter_dtype"], loc), loc)
        self._call_helper(new, "striped_read", [shared, out], loc)
        return out

    def _mapped_reduce(self, new, plan, kws, loc):
        """A reduction over a block's groups of warps (``this_block().group_by(n)``): each
        warp's (CUB's WarpReduce), its lane 0's through shared memory to the first lanes of
        every warp of its group, reduced again there (WarpReduce over as many lanes as the
        group has warps); the result in every member, zero in a thread of no group."""
        extra = dict(plan.extra_constants)
        if self._is_thread_array(kws["src"]):
            raise self.error(f"coop.{plan.target.name.split('.')[-1]}: over this_block()."
                             f"group_by({extra['warps']}) takes one value a thread (a scalar), "
                             f"not a per-thread array")
        width = self._define(new, self.ir.Const(extra["warps"], loc), loc)
        partial = self._call_entry(new, plan.target, kws, loc)
        typed = self._array(new, "thread_data", 1, partial, loc)
        shared = self._array(new, "shared", group_helpers.WARP,
                             self._attribute(new, typed, "dtype", loc), loc)
        gathered = self._call_helper(new, "mapped_gather", [shared, partial, width], loc)
        valid = self._call_helper(new, "mapped_warps", [width], loc)
        total = self._call_entry(new, plan.target, dict(kws, src=gathered, valid_items=valid),
                                 loc)
        helper, consts = group_helpers.query("warps_within_block", extra["warps"], "is_member",
                                             None, extra["exhaustive"])
        member = self._call_helper(new, helper, [self._define(new, self.ir.Const(c, loc), loc)
                                                 for c in consts], loc)
        return self._call_helper(new, "mapped_result", [shared, total, typed, member], loc)

    def _decoder(self, new, plan, kws, loc):
        """CUB's decoder made on the runs (``kws``: the constructor's) with the decoded size in
        a uint64 slot of its own, and a window's arrays: (decoder, size, items, offsets)."""
        n = dict(plan.extra_constants)["decoded_items_per_thread"]
        size = self._array(new, "local", 1, self._dtype(new, "uint64", loc), loc)
        decoder = self._call_entry(new, plan.target, dict(kws, total_decoded_size=size), loc)
        items = self._array(new, "local", n, self._attribute(new, kws["run_values"], "dtype",
                                                             loc), loc)
        return decoder, size, items, self._array(new, "local", n, self._dtype(new, "uint64",
                                                                              loc), loc)

    def _run_length(self, new, plan, kws, loc):
        """cuda.coop's run_length_decode: CUB's decoder made on the runs, then one window of
        ``decoded_items_per_thread`` items a thread decoded from ``decoded_window_offset``;
        past the decoded size, zero items and all-ones relative offsets (CUB leaves the padding
        runs' values there). The decoded size goes to ``total_decoded_size`` when given."""
        offset = kws.pop("decoded_window_offset", None)
        offset = offset if offset is not None else self._define(new, self.ir.Const(0, loc), loc)
        relative = kws.pop("relative_offsets", None)
        total = kws.pop("total_decoded_size", None)
        decoder, size, items, offsets = self._decoder(new, plan, kws, loc)
        relative = relative if relative is not None else offsets
        method = self._attribute(new, decoder, "decode", loc)
        self._define(new, self.ir.Expr.call(method, [items, offset, relative], (), loc), loc)
        self._call_helper(new, "window_mask", [items, relative, offset, size], loc)
        if total is not None:
            self._call_helper(new, "copy_items", [size, total], loc)
        return items

    def _run_length_into(self, new, plan, kws, loc):
        """cuda.coop's run_length_decode_into: every window decoded in turn into
        ``destination`` from ``destination_offset`` (relative offsets into
        ``relative_offsets``, a global array, when given); the decoded size returned."""
        destination = kws.pop("destination")
        start = kws.pop("destination_offset", None)
        start = start if start is not None else self._define(new, self.ir.Const(0, loc), loc)
        relative = kws.pop("relative_offsets", None)
        decoder, size, items, offsets = self._decoder(new, plan, kws, loc)
        given = self._define(new, self.ir.Const(relative is not None, loc), loc)
        if relative is None:  # never written: the helper's flag is off
            relative = self._array(new, "local", 1, self._dtype(new, "uint64", loc), loc)
        return self._call_helper(new, "decode_into", [
            decoder, items, offsets, size, destination, relative, start, given], loc,
            calls_primitive=True)

    def _check_bits(self, call, plan):
        """A constant bit range lies within keys whose dtype is a constant."""
        kws = dict(plan.kws)
        bits = {k: (v.value if isinstance(v, Constant) else self.trace.value(v)[0])
                for k, v in kws.items() if k in ("begin_bit", "end_bit")}
        keys = kws.get("keys", kws.get("items"))
        if not bits or keys is None or isinstance(keys, Constant):
            return
        d = self.trace.definition(keys)
        dtype = self.trace.value(d.args[1])[0] if is_op(self.ir, d, "call") and \
            len(d.args) > 1 else UNKNOWN
        try:
            check_bit_range(call.name, bits, dtype)
        except CoopgenError as e:
            raise self.error(str(e)) from None

    def _group_call(self, new, stmt, call):
        expr, loc = stmt.value, stmt.loc
        if not expr.args or (group := self.group_of(expr.args[0])) is None:
            raise self.error(f"coop.{call.name}: the first argument must be a group "
                             f"(coop.this_block(), coop.this_warp(), "
                             f"coop.this_warp().group_by(n)) made in this kernel")
        try:
            plan = call.plan(group, list(expr.args[1:]), dict(expr.kws), self._value_of(),
                             self._is_thread_array)
        except CoopgenError as e:
            raise self.raised(e) from None
        self._check_bits(call, plan)
        for _, v in plan.kws:  # Python operators (globals, closure variables): device functions
            if not isinstance(v, Constant) and isinstance(self.trace.definition(v), self.ir.glob):
                self.python_argument(v, self.trace.value(v)[0])
        kws = {k: self._define(new, self.ir.Const(v.value, loc), loc)
               if isinstance(v, Constant) else v for k, v in plan.kws}
        kept = self._prepare_arguments(new, plan, kws, loc)
        if plan.special is not None:
            self._drop_callee(expr.func)
            self._replace_value(stmt, getattr(self, f"_{plan.special}")(new, plan, kws, loc))
            return
        result = kws[plan.outputs[0]] if plan.result == "output" else None
        if plan.result == "new":
            outs = [self._new_output(new, plan, kws[plan.like], loc) for _ in plan.outputs]
            kws.update(zip(plan.outputs, outs))
            result = outs[0] if len(outs) == 1 else self._define(
                new, self.ir.Expr.build_tuple(outs, loc), loc)
        elif plan.result == "items":  # scalars, as one-item arrays of their types
            for name in plan.inputs:
                array = self._array(new, "thread_data", 1, kws[name], loc)
                self._call_helper(new, "put_first", [array, kws[name]], loc)
                kws[name] = array
            result = [kws[name] for name in plan.inputs]
        elif plan.result == "copy":
            copies = []
            for name in plan.inputs:
                copy = self._like(new, kws[name], loc)
                self._call_helper(new, "copy_items", [kws[name], copy], loc)
                kws[name] = copy
                copies.append(copy)
            result = copies[0] if len(copies) == 1 else self._define(
                new, self.ir.Expr.build_tuple(copies, loc), loc)
        self._drop_callee(expr.func)
        if isinstance(plan.target, str):  # a helper of the first argument (a thread's sum;
            # of a scalar: the scalar)
            first = kws[plan.like]
            call_expr = self.ir.Expr.call(self._helper(new, plan.target[7:], loc), [first], (),
                                          loc) if self._is_thread_array(first) else first
        else:
            target = self._define(new, self.ir.Global(plan.target.name.replace(".", "_"),
                                                      plan.target, loc), loc)
            call_expr = self.ir.Expr.call(target, [], tuple(kws.items()), loc)
        if plan.broadcast in ("block", "warp"):
            result = self._broadcast(new, plan, self._define(new, call_expr, loc), loc)
        elif result is not None:
            self._define(new, call_expr, loc)
        if plan.result == "items":  # each array's item, after the call
            zero = self._define(new, self.ir.Const(0, loc), loc)
            got = [self._define(new, self.ir.Expr.getitem(a, zero, loc), loc) for a in result]
            result = got[0] if len(got) == 1 else self._define(
                new, self.ir.Expr.build_tuple(got, loc), loc)
        if kept is not None:
            name, saved, valid = kept
            width = [self._define(new, self.ir.Const(plan.width, loc), loc)] \
                if plan.family == "warp" else []
            self._call_helper(new, "restore_unloaded_warp" if width else
                              "restore_unloaded_block", [kws[name], saved, valid, *width], loc)
        self._replace_value(stmt, call_expr if result is None else result)

    def _prepare_arguments(self, new, plan, kws, loc):
        """The target's arguments as the plan says, in ``kws``: a scalar wrapped, sources
        moved by their offset and each warp's tile, run-time checks, copies; returns what a
        partial load puts back after the call (or None)."""
        if plan.wrap:  # one item as a one-item array of the other argument's dtype (a warp's
            # tile is then one item a lane)
            name, like = plan.wrap
            array = self._array(new, "local", 1, self._attribute(new, kws[like], "dtype", loc),
                                loc)
            self._call_helper(new, "put_first", [array, kws[name]], loc)
            kws[name] = array
        offset = plan.offset
        if plan.warp_tile is not None and plan.warp_tile in kws:  # each warp's own tile
            items = self._array_shape(kws[plan.warp_tile])
            if items is not None:
                consts = [self._define(new, self.ir.Const(c, loc), loc)
                          for c in (plan.width, plan.width * items)]
                tile = self._call_helper(new, "warp_tile_start", consts, loc)
                offset = tile if offset is None else self._define(
                    new, self.ir.Expr.binop(operator.add, offset, tile, loc), loc)
        if offset is not None:  # source[offset:]
            moved = plan.offset_of or plan.like
            kws[moved] = self._from_offset(new, kws[moved], offset, loc)
        for var, helper, arguments in plan.checks:  # cuda.coop's run-time preconditions
            args = [self._array(new, "shared", a[1], self._dtype(new, a[2], loc), loc)
                    if isinstance(a, tuple) and a[0] == "shared" else self._define(
                        new, self.ir.Const(self._array_shape(kws[a[1]]) or 1 if isinstance(
                            a, tuple) else a, loc), loc) for a in arguments]
            self._call_helper(new, helper, [var] + args, loc)
        kept = None
        for key, var in plan.extra:  # "_tile:num_valid": the tile's item count
            kind, name = key[1:].split(":")
            if kind == "tile":
                kws[name] = self._call_helper(new, "tile_size", [var], loc)
            elif kind == "keep":  # "_keep:dst": its slots past the valid items, put back after
                if isinstance(var, Constant):
                    var = self._define(new, self.ir.Const(var.value, loc), loc)
                kept = (name, self._like(new, kws[name], loc), var)
                self._call_helper(new, "copy_items", [kws[name], kept[1]], loc)
            elif kind == "pair":  # "_pair:prefix_op": (a function, its state array, given)
                fn, state, given = var
                if not isinstance(given, Constant):
                    self._drop_callee(given)
                fn = fn if hasattr(fn, "py_func") else self.device_function(fn)
                fn = self._define(new, self.ir.Global(fn.__name__, fn, loc), loc)
                kws[name] = self._define(new, self.ir.Expr.build_tuple([fn, state], loc), loc)
            elif self._is_thread_array(kws[name]):  # "_copy:src": a copy of that array
                copy = self._like(new, kws[name], loc)
                self._call_helper(new, "copy_items", [kws[name], copy], loc)
                kws[name] = copy
        return kept

    def _broadcast(self, new, plan, value, loc):
        """A reduction's result (valid in the group's first member) in every member."""
        if plan.broadcast == "warp":  # CUB's shuffle moves any type (numba's: 32/64-bit)
            lane = self._define(new, self.ir.Const(0, loc), loc)
            width = self._define(new, self.ir.Const(plan.width, loc), loc)
            return self._call_entry(new, plan.warp_broadcast, {
                "input": value, "src_lane": lane, "threads_in_warp": width}, loc)
        typed = self._array(new, "thread_data", 1, value, loc)  # an array of value's type
        slot = self._array(new, "shared", 1, self._attribute(new, typed, "dtype", loc), loc)
        return self._call_helper(new, "block_broadcast", [slot, value], loc)

    def _group_query(self, new, stmt, group, fdef):
        """``group.rank(level)``, ``count(level)``, ``rank_as(dtype, level)``, ``sync()``,
        ``sync_aligned()`` (every member reaches it: the same barrier), ``is_member()``."""
        expr, loc, name = stmt.value, stmt.loc, fdef.attr
        args = [self.trace.value(a)[0] for a in expr.args]
        kws = {k: self.trace.value(v)[0] for k, v in expr.kws}
        try:
            helper_name, constants, dtype = group_helpers.query_call(group, name, args, kws)
        except CoopgenError as e:
            raise (self.unsupported if isinstance(e, NotImplementedError) else self.error)(
                str(e)) from None
        consts = [self._define(new, self.ir.Const(c, loc), loc) for c in constants]
        value = self.ir.Expr.call(self._helper(new, helper_name, loc), consts, (), loc)
        if dtype is not None:
            cast = self._define(new, self.ir.Global(getattr(dtype, "__name__", "dtype"), dtype,
                                                    loc), loc)
            value = self.ir.Expr.call(cast, [self._define(new, value, loc)], (), loc)
        self._replace_value(stmt, value)
        self._redefine(fdef, self.ir.Const(None, loc))

