"""cuda.coop's group-first calls in CuTe DSL kernels: the kernels of tests/gpu/group_cases.py
(numba's) written for CuTe DSL, call for call, so that each runs on the same inputs against the
same numpy answers (that module's ``Case.inputs`` and ``Case.want``). Every kernel takes four
global tensors (the case's arrays, then one-item placeholders); ``launcher`` launches it on
GRID blocks of the case's block shape."""
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
import group_cases as numba_cases  # noqa: E402
from group_cases import GRID, ITEMS, MODULE_WARP  # noqa: E402

import cutlass  # noqa: E402
import cutlass.cute as cute  # noqa: E402
from cutlass.base_dsl.enums import AddressSpace  # noqa: E402
from cutlass.cute.runtime import make_ptr  # noqa: E402

from coopgen import coop  # noqa: E402
from coopgen.cute.describe import NUMBERS  # noqa: E402

ARGS = 4  # tensors a kernel takes


def _bid():
    return cute.arch.block_idx()[0]


def _loaded(a, T, **kws):
    """The block, this thread's ITEMS items (of T) of its block's tile of ``a`` (loaded:
    blocked) and the tile's first item."""
    block = coop.this_block()
    items = coop.ThreadData(ITEMS, dtype=T)
    base = _bid() * block.count() * ITEMS
    coop.load(block, a, items, offset=base, **kws)
    return block, items, base


def load_store(T, algorithm):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        # the tensor's own items (signed for unsigned T: vectorized loads need them alike)
        block, items, base = _loaded(a, a.element_type, algorithm=algorithm)
        coop.store(block, b, items, algorithm=algorithm, offset=base)
    return k


def partial_load(T):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=T)
        base = _bid() * block.count() * ITEMS
        coop.load(block, a, items, algorithm="striped", valid_items=b[0], oob_default=7,
                  offset=base)
        coop.store(block, c, items, algorithm="striped", offset=base)
    return k


def reductions(T, broadcast):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        total = coop.sum(block, items, broadcast=broadcast)
        biggest = coop.reduce(block, items[0], binary_op="max", broadcast=broadcast)
        mine = coop.sum(coop.this_thread(), items)
        g = _bid() * block.count() + block.rank()
        if cutlass.const_expr(broadcast):
            b[3 * g] = total
            b[3 * g + 1] = biggest
        elif block.rank() == 0:
            b[3 * g] = total
            b[3 * g + 1] = biggest
        b[3 * g + 2] = mine
    return k


SCANS = {0: lambda g, x: coop.exclusive_sum(g, x), 1: lambda g, x: coop.inclusive_sum(g, x),
         2: lambda g, x: coop.exclusive_scan(g, x, scan_op="max", initial_value=-1000),
         3: lambda g, x: coop.inclusive_scan(g, x, scan_op="min"),
         4: lambda g, x: coop.scan(g, x, mode="inclusive")}


def scans(T, op):
    scan = SCANS[op]

    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        out = scan(block, items)
        coop.store(block, b, out, offset=base)
        coop.store(block, c, items, offset=base)  # the input stays as it was
    return k


def sorts(T, kind, descending):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, keys, base = _loaded(a, T)
        if cutlass.const_expr(kind == 0):
            coop.store(block, b, coop.radix_sort_keys(block, keys, descending=descending),
                       offset=base)
        elif cutlass.const_expr(kind == 1):
            coop.store(block, b, coop.merge_sort_keys(block, keys, descending=descending),
                       offset=base)
        else:
            vals = coop.ThreadData(ITEMS, dtype=np.int32)
            for i in cutlass.range_constexpr(ITEMS):
                vals[i] = block.rank() * ITEMS + i
            ks, vs = coop.radix_sort_pairs(block, keys, vals, descending=descending)
            coop.store(block, b, ks, offset=base)
            coop.store(block, c, vs, offset=base)
    return k


REARRANGE = {0: lambda g, x: coop.exchange(g, x, mode="blocked_to_striped"),
             1: lambda g, x: coop.adjacent_difference(g, x),
             2: lambda g, x: coop.adjacent_difference(g, x, direction="right"),
             3: lambda g, x: coop.shuffle(g, x, mode="up")}


def rearrange(T, kind):
    how = REARRANGE[kind]

    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        out = how(block, items)
        for i in cutlass.range_constexpr(ITEMS):  # each thread's own items, blocked
            b[base + block.rank() * ITEMS + i] = out[i]
    return k


def flags(T, mode):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        if cutlass.const_expr(mode == 2):
            heads, tails = coop.discontinuity(block, items, mode="heads_and_tails")
            coop.store(block, b, heads, offset=base)
            coop.store(block, c, tails, offset=base)
        elif cutlass.const_expr(mode == 1):
            coop.store(block, b, coop.discontinuity(block, items, mode="tails"), offset=base)
        else:
            coop.store(block, b, coop.discontinuity(block, items), offset=base)
    return k


def counting(T, kind, counter=None, width=32, descending=False):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        if cutlass.const_expr(kind == 0):
            coop.store(block, b, coop.radix_rank(block, items, begin_bit=2, radix_bits=3),
                       offset=base)
        elif cutlass.const_expr(kind == 2):
            ranks = coop.radix_rank(block, items, begin_bit=width - 8, end_bit=width,
                                    descending=descending)
            coop.store(block, b, ranks, offset=base)
        else:
            counts = coop.histogram(block, items, bins=64, bins_per_thread=1,
                                    counter_dtype=counter)
            if block.rank() < 64:
                b[_bid() * 64 + block.rank()] = counts[0]
    return k


def histogram_kept(T, algorithm):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        counts = coop.histogram(block, items, bins=numba_cases.HISTOGRAM_BINS,
                                bins_per_thread=2, counter_dtype=np.int64, algorithm=algorithm)
        slot = (_bid() * block.count() + block.rank()) * 2
        b[slot] = counts[0]
        b[slot + 1] = counts[1]
        coop.store(block, c, items, offset=base)
    return k


def mapped_reductions(T, width, exhaustive):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block = coop.this_block()
        warps = block.group_by(width, exhaustive=exhaustive)
        g = _bid() * block.count() + block.rank()
        b[g] = coop.sum(warps, a[g])
        c[g] = coop.reduce(warps, a[g], binary_op="max")
        d[g] = coop.sum(MODULE_WARP, a[g])
    return k


def level_queries(T):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        thread, warp, block = coop.this_thread(), coop.this_warp(), coop.this_block()
        lanes, warps, grid = warp.group_by(8), block.group_by(2), coop.this_grid()
        q = cute.size(a) // 12
        g = grid.rank()
        a[g] = cutlass.Int64(thread.rank("block"))
        a[q + g] = cutlass.Int64(warp.count("block"))
        a[2 * q + g] = cutlass.Int64(lanes.rank("warp"))
        a[3 * q + g] = cutlass.Int64(lanes.count("warp"))
        a[4 * q + g] = cutlass.Int64(warps.rank("block"))
        a[5 * q + g] = cutlass.Int64(warps.count("block"))
        a[6 * q + g] = cutlass.Int64(warps.count("thread"))
        a[7 * q + g] = block.rank_as(np.int64, "grid")
        a[8 * q + g] = cutlass.Int64(block.count("grid"))
        a[9 * q + g] = cutlass.Int64(grid.count("block"))
        a[10 * q + g] = cutlass.Int64(thread.count("warp"))
        a[11 * q + g] = coop.sum(thread, a[g])
    return k


def warps(T, width):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        lw = coop.this_warp().group_by(width)
        block = coop.this_block()
        items = coop.ThreadData(ITEMS, dtype=T)
        base = _bid() * block.count() * ITEMS  # each warp's tile follows by itself
        coop.load(lw, a, items, algorithm="striped", offset=base)
        ordered = coop.merge_sort_keys(lw, items)
        coop.store(lw, b, ordered, offset=base)
        total = coop.sum(lw, items[0])
        scanned = coop.exclusive_sum(lw, items[1])
        g = _bid() * block.count() + block.rank()
        c[2 * g] = total
        c[2 * g + 1] = scanned
    return k


def _marked(items, r):  # plain Python, run as the kernel is traced
    for i in range(ITEMS):
        items[i] = items.element_type(-1 - (r * ITEMS + i))  # each slot's own mark


def partial_transpose_load(T, warp):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block = coop.this_block()
        group = coop.this_warp().group_by(8) if warp else block
        items = coop.ThreadData(ITEMS, dtype=T)
        r, base = block.rank(), _bid() * block.count() * ITEMS
        _marked(items, r)
        loaded = coop.load(group, a, items, algorithm="transpose", valid_items=b[0],
                           offset=base)
        for i in cutlass.range_constexpr(ITEMS):
            c[base + r * ITEMS + i] = loaded[i]
    return k


def warp_partial_sort(T):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        warp = coop.this_warp()
        base = _bid() * coop.this_block().count() * ITEMS
        keys = coop.ThreadData(ITEMS, dtype=T)
        coop.load(warp, a, keys, offset=base)
        ordered = coop.merge_sort_keys(warp, keys, valid_items=32 * ITEMS - 9, oob_default=99)
        coop.store(warp, b, ordered, offset=base)
    return k


def scalar_sorts(T):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block = coop.this_block()
        n, r = block.count(), block.rank()
        base = _bid() * n
        x = a[base + r]
        b[3 * base + r] = coop.merge_sort_keys(block, x)
        keys, where = coop.radix_sort_pairs(block, x, r)  # a scalar key and value a thread
        b[3 * base + n + r] = keys
        b[3 * base + 2 * n + r] = a[base + where]
    return k


def closure_operators(T):
    def difference(current, neighbor):  # plain Python functions the kernel closes over
        return current * 2 - neighbor

    def rises(previous, current):
        return previous < current

    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        diffs = coop.adjacent_difference(block, items, direction="right",
                                         tile_successor_item=7, difference_op=difference)
        heads = coop.discontinuity(block, diffs, flag_op=rises, tile_predecessor_item=4)
        coop.store(block, b, diffs, offset=base)
        coop.store(block, c, heads, offset=base)
    return k


def warp_scalar_store(T):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block = coop.this_block()
        base = _bid() * block.count()
        value = a[base + block.rank()] + 1  # each warp stores its 32 values after the last
        coop.store(coop.this_warp(), b, value, algorithm="direct", offset=base)
    return k


def membership(T):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block = coop.this_block()
        lanes = coop.this_warp().group_by(8)
        pairs = block.group_by(2, exhaustive=False)  # a last odd warp is in no pair
        lanes.sync_aligned()
        coop.this_warp().sync_aligned()
        q = cute.size(a) // 4
        g = _bid() * block.count() + block.rank()
        a[g] = cutlass.Int64(lanes.rank())
        a[q + g] = cutlass.Int64(lanes.count())
        member = pairs.is_member()
        a[2 * q + g] = cutlass.Int64(member)
        a[3 * q + g] = cutlass.select_(member, cutlass.Int64(pairs.rank()), cutlass.Int64(-1))
    return k


def top_k(T, largest):
    @cute.kernel
    def k(a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, d: cute.Tensor):
        block, items, base = _loaded(a, T)
        top = coop.topk_max_keys(block, items, 16) if largest else \
            coop.topk_min_keys(block, items, 16)
        coop.store(block, b, top, offset=base)
    return k


#: numba's kernel factory -> its CuTe DSL twin (the same parameters)
TWINS = {numba_cases.load_store: load_store, numba_cases.partial_load: partial_load,
         numba_cases.reductions: reductions, numba_cases.scans: scans,
         numba_cases.sorts: sorts, numba_cases.rearrange: rearrange,
         numba_cases.flags: flags, numba_cases.counting: counting,
         numba_cases.mapped_reductions: mapped_reductions,
         numba_cases.level_queries: level_queries, numba_cases.warps: warps,
         numba_cases.partial_transpose_load: partial_transpose_load,
         numba_cases.warp_partial_sort: warp_partial_sort, numba_cases.scalar_sorts: scalar_sorts,
         numba_cases.closure_operators: closure_operators,
         numba_cases.warp_scalar_store: warp_scalar_store, numba_cases.membership: membership,
         numba_cases.top_k: top_k, numba_cases.histogram_kept: histogram_kept}
#: numba's cases that have a CuTe DSL twin (the rest: run-length decoding, prefix callbacks,
#: a TempStorage's reservations, numba's device functions; clusters are a test of their own)
CASES = [c for c in numba_cases.CASES if c.make in TWINS]


def kernel_of(case, dtype):
    """The case's kernel for items of ``dtype`` (CuTe DSL 4.8.1 types a kernel's tensor
    arguments of unsigned items signed, so the fragments take the case's dtype, not the
    tensor's: docs/cute.md, Limits)."""
    return TWINS[case.make](NUMBERS[np.dtype(dtype).name], **case.params)


def _shape(block) -> tuple:
    block = (block,) if isinstance(block, int) else tuple(block)
    return block + (1,) * (3 - len(block))


def launcher(kernel, arrays, block):
    """A ``@cute.jit`` launching ``kernel`` on GRID blocks of ``block`` with the arrays (by
    pointer; the missing ones one-item placeholders)."""
    sizes = [a.size for a in arrays] + [1] * (ARGS - len(arrays))
    shape = _shape(block)

    @cute.jit
    def launch(p0: cute.Pointer, p1: cute.Pointer, p2: cute.Pointer, p3: cute.Pointer):
        kernel(cute.make_tensor(p0, cute.make_layout(sizes[0])),
               cute.make_tensor(p1, cute.make_layout(sizes[1])),
               cute.make_tensor(p2, cute.make_layout(sizes[2])),
               cute.make_tensor(p3, cute.make_layout(sizes[3]))).launch(
            grid=(GRID, 1, 1), block=shape)
    return launch


def pointers(arrays, addresses=None):
    """The launch's pointer arguments (address 0: placeholders to compile with)."""
    addresses = list(addresses or [0] * len(arrays)) + [0] * (ARGS - len(arrays))
    dtypes = [np.dtype(a.dtype).name for a in arrays] + ["int32"] * (ARGS - len(arrays))
    return [make_ptr(NUMBERS[d], address, AddressSpace.gmem, assumed_align=16)
            for d, address in zip(dtypes, addresses)]


def nthreads(block) -> int:
    return int(np.prod(_shape(block)))
