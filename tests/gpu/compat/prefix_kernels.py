"""cuda.coop's documented block prefix callback, without ``StatefulFunction``: a Python class
made a numba extension type with a struct model, whose ``__call__(self_ptr, block_aggregate)``
returns the tile's prefix and updates ``self_ptr[0]``, passed to single-phase scans as
``prefix_op=`` (or CUB's ``block_prefix_callback_op=``) in a 1-element local array. Each block
scans a segment tile by tile, carrying the running total in the callback's state.

Each ``case_*`` returns a coop_kernels.Case (linked for sm_90 by tests/cpu/test_coop_compile.py,
launched by tests/gpu/compat/test_coop_containers.py).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import cuda
from numba.cuda import cgutils
from numba.cuda.extending import (lower_builtin, make_attribute_wrapper, models,
                                  register_model, type_callable, typeof_impl)

from coop_kernels import Case, float2, make_float2
from coopgen import coop

SEGMENT = 1024  # items per block
THREADS = 64


class BlockPrefixCallbackOp:
    def __init__(self, running_total):
        self.running_total = running_total

    def __call__(self_ptr, block_aggregate):
        old = self_ptr[0].running_total
        self_ptr[0] = BlockPrefixCallbackOp(old + block_aggregate)
        return old


class BlockPrefixCallbackOpType(numba.types.Type):
    def __init__(self):
        super().__init__(name="BlockPrefixCallbackOp")


block_prefix_callback_op_type = BlockPrefixCallbackOpType()


@typeof_impl.register(BlockPrefixCallbackOp)
def _typeof_callback(val, c):
    return block_prefix_callback_op_type


@type_callable(BlockPrefixCallbackOp)
def _type_callback(context):
    def typer(running_total):
        if isinstance(running_total, numba.types.Integer):
            return block_prefix_callback_op_type
    return typer


@register_model(BlockPrefixCallbackOpType)
class _CallbackModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("running_total", numba.int32)])


make_attribute_wrapper(BlockPrefixCallbackOpType, "running_total", "running_total")


@lower_builtin(BlockPrefixCallbackOp, numba.types.Integer)
def _make_callback(context, builder, sig, args):
    state = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    state.running_total = context.cast(builder, args[0], sig.args[0], numba.int32)
    return state._getvalue()


def add(a, b):  # a plain Python scan operator
    return a + b


def _segment_scan(ipt, mode, algorithm, scan_op, keyword):
    tile = THREADS * ipt

    @cuda.jit
    def kernel(d_in, d_out):
        prefix = coop.local.array(1, dtype=block_prefix_callback_op_type)
        prefix[0] = BlockPrefixCallbackOp(0)
        items = coop.local.array(ipt, dtype=numba.int32)
        seg = cuda.blockIdx.x * SEGMENT
        for start in range(0, SEGMENT, tile):
            base = seg + start + cuda.threadIdx.x * ipt
            for i in range(ipt):
                items[i] = d_in[base + i]
            if keyword == "prefix_op":
                coop.block.scan(items, items, mode=mode, scan_op=scan_op, prefix_op=prefix,
                                algorithm=algorithm)
            else:
                coop.block.scan(items, items, mode=mode, scan_op=scan_op,
                                block_prefix_callback_op=prefix, algorithm=algorithm)
            for i in range(ipt):
                d_out[base + i] = items[i]
    return kernel


def _case(rng, ipt, mode, algorithm, scan_op, keyword="prefix_op"):
    blocks = 3
    x = rng.integers(-1000, 1000, blocks * SEGMENT, dtype=np.int32)
    segs = x.reshape(blocks, SEGMENT)
    running = np.cumsum(segs, axis=1, dtype=np.int32)
    want = (running if mode == "inclusive" else running - segs).ravel()

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    kernel = _segment_scan(ipt, mode, algorithm, scan_op, keyword)
    return Case(kernel, blocks, THREADS, (x, np.zeros_like(x)), check)


def case_documented_prefix_exclusive_one_item_raking(rng):
    return _case(rng, 1, "exclusive", "raking", "+")


def case_documented_prefix_inclusive_items_warp_scans(rng):
    return _case(rng, 4, "inclusive", "warp_scans", "+")


def case_documented_prefix_exclusive_python_operator(rng):
    return _case(rng, 4, "exclusive", "warp_scans", add)


def case_documented_prefix_inclusive_python_operator_cub_keyword(rng):
    return _case(rng, 2, "inclusive", "raking", add, keyword="block_prefix_callback_op")


CASES = [case_documented_prefix_exclusive_one_item_raking,
         case_documented_prefix_inclusive_items_warp_scans,
         case_documented_prefix_exclusive_python_operator,
         case_documented_prefix_inclusive_python_operator_cub_keyword]


# --- records as items (Mamba's selective scan): h = a * h_prev + b as a scan over (a, h) pairs,
# composed by (a1, h1) o (a2, h2) = (a1 a2, a2 h1 + h2); the callback carries the running pair
# from tile to tile.

def compose_float2(out, x, y):  # cuda.coop's op(out, a, b) on a numba struct: x, then y
    out[0] = make_float2(x[0].x * y[0].x, y[0].x * x[0].y + y[0].y)


class PairPrefixCallbackOp:
    """The callback of cuda.coop's Mamba kernel: ``__call__(self_ptr, block_aggregate,
    out_ptr)`` on pointers, writing the pair before the tile to ``out_ptr[0]``."""

    def __init__(self, running):
        self.running = running

    def __call__(self_ptr, block_aggregate, out_ptr):
        before = self_ptr[0].running
        tile = block_aggregate[0]
        self_ptr[0] = PairPrefixCallbackOp(make_float2(before.x * tile.x,
                                                       tile.x * before.y + tile.y))
        out_ptr[0] = before


class PairPrefixCallbackOpType(numba.types.Type):
    def __init__(self):
        super().__init__(name="PairPrefixCallbackOp")


pair_prefix_type = PairPrefixCallbackOpType()


@typeof_impl.register(PairPrefixCallbackOp)
def _typeof_pair_callback(val, c):
    return pair_prefix_type


@type_callable(PairPrefixCallbackOp)
def _type_pair_callback(context):
    def typer(running):
        if running == float2:
            return pair_prefix_type
    return typer


@register_model(PairPrefixCallbackOpType)
class _PairCallbackModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("running", float2)])


make_attribute_wrapper(PairPrefixCallbackOpType, "running", "running")


@lower_builtin(PairPrefixCallbackOp, type(float2))
def _make_pair_callback(context, builder, sig, args):
    state = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    state.running = args[0]
    return state._getvalue()


PAIR = np.dtype([("a", np.float32), ("h", np.float32)], align=True)


def compose_records(x, y, out):  # records: the result written to the last argument
    out.a = x.a * y.a
    out.h = y.a * x.h + y.h


class RecordPrefixCallbackOp:
    """The same callback on numpy records: ``block_aggregate`` and ``out`` are records."""

    def __init__(self, a, h):
        self.a = a
        self.h = h

    def __call__(self_ptr, block_aggregate, out):
        a, h = self_ptr[0].a, self_ptr[0].h
        out.a = a
        out.h = h
        self_ptr[0] = RecordPrefixCallbackOp(a * block_aggregate.a,
                                             block_aggregate.a * h + block_aggregate.h)


class RecordPrefixCallbackOpType(numba.types.Type):
    def __init__(self):
        super().__init__(name="RecordPrefixCallbackOp")


record_prefix_type = RecordPrefixCallbackOpType()


@typeof_impl.register(RecordPrefixCallbackOp)
def _typeof_record_callback(val, c):
    return record_prefix_type


@type_callable(RecordPrefixCallbackOp)
def _type_record_callback(context):
    def typer(a, h):
        if isinstance(a, numba.types.Float) and isinstance(h, numba.types.Float):
            return record_prefix_type
    return typer


@register_model(RecordPrefixCallbackOpType)
class _RecordCallbackModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("a", numba.float32), ("h", numba.float32)])


make_attribute_wrapper(RecordPrefixCallbackOpType, "a", "a")
make_attribute_wrapper(RecordPrefixCallbackOpType, "h", "h")


@lower_builtin(RecordPrefixCallbackOp, numba.types.Float, numba.types.Float)
def _make_record_callback(context, builder, sig, args):
    state = cgutils.create_struct_proxy(sig.return_type)(context, builder)
    state.a = context.cast(builder, args[0], sig.args[0], numba.float32)
    state.h = context.cast(builder, args[1], sig.args[1], numba.float32)
    return state._getvalue()


PAIR_ITEMS = 4


@cuda.jit
def pair_scan_numba_struct(d_a, d_h, d_out_a, d_out_h):
    prefix = coop.local.array(1, dtype=pair_prefix_type)
    prefix[0] = PairPrefixCallbackOp(make_float2(1.0, 0.0))
    items = coop.local.array(PAIR_ITEMS, dtype=float2)
    for start in range(0, SEGMENT, THREADS * PAIR_ITEMS):
        base = cuda.blockIdx.x * SEGMENT + start + cuda.threadIdx.x * PAIR_ITEMS
        for i in range(PAIR_ITEMS):
            items[i] = make_float2(d_a[base + i], d_h[base + i])
        coop.block.scan(items, items, mode="inclusive", scan_op=compose_float2,
                        prefix_op=prefix, algorithm="warp_scans")
        for i in range(PAIR_ITEMS):
            d_out_a[base + i] = items[i].x
            d_out_h[base + i] = items[i].y


@cuda.jit
def pair_scan_records(d_a, d_h, d_out_a, d_out_h):
    prefix = coop.local.array(1, dtype=record_prefix_type)
    prefix[0] = RecordPrefixCallbackOp(1.0, 0.0)
    items = coop.local.array(PAIR_ITEMS, dtype=PAIR)
    for start in range(0, SEGMENT, THREADS * PAIR_ITEMS):
        base = cuda.blockIdx.x * SEGMENT + start + cuda.threadIdx.x * PAIR_ITEMS
        for i in range(PAIR_ITEMS):
            items[i].a = d_a[base + i]
            items[i].h = d_h[base + i]
        coop.block.inclusive_scan(items, items, scan_op=compose_records, prefix_op=prefix)
        for i in range(PAIR_ITEMS):
            d_out_a[base + i] = items[i].a
            d_out_h[base + i] = items[i].h


def _pair_case(rng, kernel):
    blocks = 3
    a = rng.uniform(0.95, 1.0, blocks * SEGMENT).astype(np.float32)
    h = rng.uniform(-1.0, 1.0, blocks * SEGMENT).astype(np.float32)
    want_a, want_h = np.empty((blocks, SEGMENT)), np.empty((blocks, SEGMENT))
    run_a, run_h = np.ones(blocks), np.zeros(blocks)  # the recurrence, in float64
    for t, (at, ht) in enumerate(zip(a.reshape(blocks, -1).T, h.reshape(blocks, -1).T)):
        run_a, run_h = run_a * at, at * run_h + ht
        want_a[:, t], want_h[:, t] = run_a, run_h

    def check(arrays):
        np.testing.assert_allclose(arrays[2], want_a.ravel(), rtol=1e-3, atol=1e-6)
        np.testing.assert_allclose(arrays[3], want_h.ravel(), rtol=1e-3, atol=1e-4)
    return Case(kernel, blocks, THREADS, (a, h, np.zeros_like(a), np.zeros_like(h)), check)


def case_documented_prefix_pairs_numba_struct(rng):
    return _pair_case(rng, pair_scan_numba_struct)


def case_documented_prefix_pairs_records(rng):
    return _pair_case(rng, pair_scan_records)


CASES += [case_documented_prefix_pairs_numba_struct, case_documented_prefix_pairs_records]


def larger(a, b):  # a plain Python scan operator with no identity coopgen knows
    return a if a > b else b


def _zero_start_case(rng, scope, ipt):
    """cuda.coop's exclusive scans with a Python operator and no initial value start from 0
    (thread or lane 0 gets 0), in coopgen.coop only."""
    threads = 64

    @cuda.jit
    def kernel(d_in, d_out):
        t = cuda.threadIdx.x
        if scope == "warp":
            d_out[t] = coop.warp.exclusive_scan(d_in[t], larger)
        elif ipt == 1:
            d_out[t] = coop.block.exclusive_scan(d_in[t], scan_op=larger)
        else:
            items = coop.local.array(ipt, dtype=numba.int32)
            for i in range(ipt):
                items[i] = d_in[t * ipt + i]
            coop.block.exclusive_scan(items, items, scan_op=larger)
            for i in range(ipt):
                d_out[t * ipt + i] = items[i]

    n = threads * ipt
    x = rng.integers(-1000, 1000, n, dtype=np.int32)
    groups = x.reshape(-1, 32) if scope == "warp" else x.reshape(1, -1)
    want = np.concatenate([np.maximum.accumulate(np.concatenate([[0], g[:-1]]))
                           for g in groups]).astype(np.int32)

    def check(arrays):
        np.testing.assert_array_equal(arrays[1], want)
    return Case(kernel, 1, threads, (x, np.zeros_like(x)), check)


def case_coop_exclusive_scan_python_operator_starts_from_zero(rng):
    return _zero_start_case(rng, "block", 4)


def case_coop_exclusive_scan_one_item_starts_from_zero(rng):
    return _zero_start_case(rng, "block", 1)


def case_coop_warp_exclusive_scan_python_operator_starts_from_zero(rng):
    return _zero_start_case(rng, "warp", 1)


CASES += [case_coop_exclusive_scan_python_operator_starts_from_zero,
          case_coop_exclusive_scan_one_item_starts_from_zero,
          case_coop_warp_exclusive_scan_python_operator_starts_from_zero]
