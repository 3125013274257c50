"""Small device functions the group-first rewrite calls around a primitive: copies, a one-item
array, a result broadcast to the group, a histogram's striped read, run-length decoding's window
mask and its loop over windows, and the groups' rank/count queries. They read the kernel's
compiler's ``cuda`` module as the global ``cuda`` (and numpy as ``np``): each backend gets its
own copy of them (``for_backend``), compiled by its own ``device_function``."""
import types

import numpy as np

from ..model.errors import CoopgenError, CoopgenUnsupported
from .group_kinds import UNSERVED
from .kernel_ir import UNKNOWN

WARP = 32


def copy_items(src, dst):
    for i in range(src.shape[0]):
        dst[i] = src[i]


def put_first(array, value):
    array[0] = value


def block_rank():
    return cuda.threadIdx.x + cuda.blockDim.x * (  # noqa: F821 (each backend's cuda)
        cuda.threadIdx.y + cuda.blockDim.y * cuda.threadIdx.z)  # noqa: F821


def block_count():
    return cuda.blockDim.x * cuda.blockDim.y * cuda.blockDim.z  # noqa: F821


def lane():
    return block_rank() % WARP


def warp_rank():
    return block_rank() // WARP


def warp_count():
    return (block_count() + WARP - 1) // WARP


def grid_rank():
    block = cuda.blockIdx.x + cuda.gridDim.x * (  # noqa: F821
        cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z)  # noqa: F821
    return block * block_count() + block_rank()


def grid_count():
    return cuda.gridDim.x * cuda.gridDim.y * cuda.gridDim.z * block_count()  # noqa: F821


def grid_block_rank():
    return cuda.blockIdx.x + cuda.gridDim.x * (  # noqa: F821
        cuda.blockIdx.y + cuda.gridDim.y * cuda.blockIdx.z)  # noqa: F821


def grid_block_count():
    return cuda.gridDim.x * cuda.gridDim.y * cuda.gridDim.z  # noqa: F821


def warp_tile_start(width, tile):
    """Where a logical warp's tile starts: after those of the block's logical warps before it
    (CUB forms them within each physical warp)."""
    rank = block_rank()
    return ((rank // WARP) * -(-WARP // width) + (rank % WARP) // width) * tile


def tile_size(items):
    return block_count() * items.shape[0]


def restore_unloaded(items, saved, valid, rank):
    """The blocked slots past ``valid`` (of the member ``rank`` of the tile) as they were."""
    for i in range(items.shape[0]):
        if rank * items.shape[0] + i >= valid:
            items[i] = saved[i]


def restore_unloaded_block(items, saved, valid):
    restore_unloaded(items, saved, valid, block_rank())


def restore_unloaded_warp(items, saved, valid, width):
    restore_unloaded(items, saved, valid, lane() % width)


def check_within(value, low, high):
    """cuda.coop's run-time precondition: outside [low, high] the kernel traps (a count past
    the tile would read or write past it; CUB does not check)."""
    if value < low or value > high:
        trap()  # noqa: F821 (each backend's trap)


def check_items(value, items, threads):
    check_within(value, 0, items * threads)


def check_block_items(value, items):
    check_within(value, 0, items * block_count())


def check_block_rotation(value):
    check_within(value, 1, block_count() - 1)


def check_not_negative(value):
    if value < 0:
        trap()  # noqa: F821


def shuffle_down(mask, value, step):
    """``cuda.shfl_down_sync`` of an int64 as two int32 halves: numba-cuda-mlir 0.6.0 shuffles
    only the low 32 bits of a 64-bit value (int32 is what both compilers shuffle whole)."""
    bits = np.uint64(value)
    low = cuda.shfl_down_sync(mask, np.int32(bits & np.uint64(0xFFFFFFFF)), step)  # noqa: F821
    high = cuda.shfl_down_sync(mask, np.int32(bits >> np.uint64(32)), step)  # noqa: F821
    return np.int64(np.uint64(np.uint32(high)) << np.uint64(32) | np.uint64(np.uint32(low)))


def warp_total(value, biggest):
    """The sum (or the largest) of a warp's ``value`` (int64), in its first lane: shuffles
    among the lanes the block has in this warp."""
    rank = block_rank()
    lanes = min(WARP, block_count() - rank // WARP * WARP)
    mask = np.uint32(0xFFFFFFFF) if lanes == WARP else np.uint32((1 << lanes) - 1)
    step = WARP // 2
    while step > 0:
        other = shuffle_down(mask, value, step)
        if rank % WARP + step < lanes:
            value = max(value, other) if biggest else value + other
        step //= 2
    return value


def check_run_lengths(lengths, slots, bits):
    """cuda.coop's preconditions of run-length decoding, checked before CUB decodes: no
    negative run, no empty run before a non-empty one (the runs in use come first, zero-length
    padding after them), the runs' sum within the decoded offsets' ``bits``-bit type. A
    thread's runs are read here, small enough to inline (a per-thread array passed on would
    live in local memory); the block's part takes numbers."""
    low, high, end = np.int64(0), np.int64(0), np.int64(0)
    first = np.int64(block_rank() * lengths.shape[0])
    empty = np.int64(1 << 62)  # the thread's first empty run (none)
    for i in range(lengths.shape[0]):
        run = lengths[i]
        if run < 0:
            trap()  # noqa: F821
        low += np.int64(np.uint64(run) & np.uint64(0xFFFFFFFF))
        high += np.int64(np.uint64(run) >> np.uint64(32))
        end = first + i + 1 if run != 0 else end
        empty = min(empty, first + i) if run == 0 else empty
    check_block_runs(low, high, end, empty, slots, bits)


def check_block_runs(low, high, end, empty, slots, bits):
    """The block's runs: the sum in 32-bit halves (no int64 sum of them can wrap), the end of
    the runs in use the largest, each warp's through ``slots`` (three a warp, shared), then the
    block's. (Shuffles and barriers: numba-cuda-mlir's atomics in a device function are
    global.)"""
    low, high, end = warp_total(low, False), warp_total(high, False), warp_total(end, True)
    warp = block_rank() // WARP
    if block_rank() % WARP == 0:
        slots[warp], slots[WARP + warp], slots[2 * WARP + warp] = low, high, end
    cuda.syncthreads()  # noqa: F821
    low, high, end = np.int64(0), np.int64(0), np.int64(0)
    for w in range(warp_count()):
        low, high, end = low + slots[w], high + slots[WARP + w], max(end, slots[2 * WARP + w])
    cuda.syncthreads()  # noqa: F821 (the slots may be written again by a later call)
    if high + (low >> 32) > (0xFFFFFFFF if bits == 64 else 0) or empty < end:
        trap()  # noqa: F821 (the sum's bits from 32 on past the type; an empty run in use)


def check_capacity(array, first, size):
    """``size`` items from ``array[first]`` fit (cuda.coop traps before writing any)."""
    n = np.uint64(array.shape[0])
    if first > n or size > n - first:
        trap()  # noqa: F821


def block_broadcast(shared, value):
    """Thread 0's ``value`` in every thread of the block (a block reduction's result)."""
    if block_rank() == 0:
        shared[0] = value
    cuda.syncthreads()  # noqa: F821
    out = shared[0]
    cuda.syncthreads()  # noqa: F821 (the slot may be written again by a later call)
    return out


def thread_sum(items):
    total = items[0]
    for i in range(1, items.shape[0]):
        total += items[i]
    return total


def striped_read(shared, out):
    """The block's ``shared`` counters, striped: thread t gets t, t + threads, ... (zero past
    the end)."""
    cuda.syncthreads()  # noqa: F821
    rank, count = block_rank(), block_count()
    for i in range(out.shape[0]):
        b = rank + i * count
        out[i] = shared[b] if b < shared.shape[0] else 0
    cuda.syncthreads()  # noqa: F821


def window_mask(items, relative, offset, total):
    """Zero items and all-ones relative offsets past the decoded size, counted in uint64 from
    the offset as given (one at or past the end, even past CUB's offset type, masks all)."""
    size, first = np.uint64(total[0]), np.uint64(offset)
    left = size - first if first < size else np.uint64(0)
    base = np.uint64(block_rank()) * np.uint64(items.shape[0])
    for i in range(items.shape[0]):
        if base + np.uint64(i) >= left:
            items[i] = 0
            relative[i] = -1


def store_window(items, begin, size, destination, first):
    """A window's items (before ``size``), blocked, into ``destination[first + begin:]``."""
    base = begin + np.uint64(block_rank()) * np.uint64(items.shape[0])
    for i in range(items.shape[0]):
        at = base + np.uint64(i)
        if at < size:
            destination[first + at] = items[i]


def decode_into(decoder, items, relative, total, destination, relative_destination, start,
                with_relative):
    """Every window of ``decoder`` stored from ``destination[start]`` (and the relative offsets
    from ``relative_destination[start]`` when ``with_relative``); returns the decoded size."""
    size, first = np.uint64(total[0]), np.uint64(start)
    check_capacity(destination, first, size)
    if with_relative:
        check_capacity(relative_destination, first, size)
    window = np.uint64(block_count()) * np.uint64(items.shape[0])
    begin = np.uint64(0)
    while begin < size:
        decoder.decode(items, begin, relative)
        store_window(items, begin, size, destination, first)
        if with_relative:
            store_window(relative, begin, size, relative_destination, first)
        begin += window
    return total[0]


def block_sync():
    cuda.syncthreads()  # noqa: F821


def warp_sync():
    cuda.syncwarp()  # noqa: F821


def zero():
    return 0


def one():
    return 1


def rank_modulo(n):
    return block_rank() % n


def warp_rank_modulo(n):
    return warp_rank() % n


def lane_modulo(n):
    return lane() % n


def lane_divided(n):
    return lane() // n


def warp_rank_divided(n):
    return warp_rank() // n


def constant(n):
    return n


def warp_size():
    return WARP


def mapped_groups(width, exhaustive):
    """The block's groups of ``width`` warps (a partial last one counts when exhaustive)."""
    return (warp_count() + (width - 1 if exhaustive else 0)) // width


def lane_in_whole_groups(width):
    return lane() < (WARP // width) * width


def warp_in_whole_groups(width):
    return warp_rank() < (warp_count() // width) * width


def mapped_warps(width):
    """The warps of this thread's group of ``width`` warps (fewer in a partial last one)."""
    return min(width, warp_count() - warp_rank_divided(width) * width)


def mapped_gather(shared, partial, width):
    """Each warp's lane-0 ``partial`` through ``shared``: lane l gets its group's l-th warp's
    (the last one's past the group's warps), for a second warp reduction of those."""
    if lane() == 0:
        shared[warp_rank()] = partial
    cuda.syncthreads()  # noqa: F821
    first = warp_rank_divided(width) * width
    value = shared[first + min(lane(), mapped_warps(width) - 1)]
    cuda.syncthreads()  # noqa: F821
    return value


def mapped_result(shared, total, result, member):
    """Lane 0's ``total`` in every lane of its warp; zero in a thread of no group."""
    if lane() == 0:
        shared[warp_rank()] = total
    cuda.syncthreads()  # noqa: F821
    result[0] = 0
    if member:
        result[0] = shared[warp_rank()]
    cuda.syncthreads()  # noqa: F821
    return result[0]


def cluster_thread_rank():
    return cluster_block_rank() * block_count() + block_rank()  # noqa: F821


def cluster_thread_count():
    return cluster_block_count() * block_count()  # noqa: F821


#: A thread-block cluster's special registers and barrier (sm_90), as each backend's PTX.
CLUSTER_PTX = {"cluster_block_rank": ("mov.u32 $0, %cluster_ctarank;", True),
               "cluster_block_count": ("mov.u32 $0, %cluster_nctarank;", True),
               "cluster_sync": ("barrier.cluster.arrive;\n\tbarrier.cluster.wait;", False)}

#: cuda.coop's levels, finest first; ``group.rank(level)`` is the rank of the finer of the
#: group and the level within the coarser (``this_thread().rank("block")``: the thread's in the
#: block; ``this_block().rank("thread")``: the same), ``count`` how many of the finer the
#: coarser holds; the same level: rank 0 of 1.
LEVELS = ("thread", "threads_within_warp", "warp", "warps_within_block", "block", "cluster",
          "grid")


def query(kind: str, width, name: str, level, exhaustive: bool = True):
    """(helper, its constant arguments) of ``group.rank(level)``/``count``/``sync()``/
    ``is_member()``, or None where the group has no such query."""
    if name == "is_member":  # a group made with exhaustive=False leaves out a partial group
        partial = {"threads_within_warp": "lane_in_whole_groups",
                   "warps_within_block": "warp_in_whole_groups"}.get(kind)
        return ("one", ()) if exhaustive or partial is None else (partial, (width,))
    if name == "sync":
        return SYNCS.get(kind) if level is None else None
    level = {"gpu_thread": "thread"}.get(level, level)
    if kind not in LEVELS or level not in LEVELS or name not in ("rank", "count"):
        return None
    pair = tuple(sorted((kind, level), key=LEVELS.index))
    if pair[0] == pair[1]:
        return ("zero", ()) if name == "rank" else ("one", ())
    found = RANKS.get(pair)
    return None if found is None else found[name == "count"](width, exhaustive)


def query_call(group, name: str, args, kws) -> tuple:
    """(helper, its constants, the dtype to cast to or None) of ``group.<name>(*args,
    **kws)``, host values: ``rank(level)``, ``count(level)``, ``rank_as(dtype, level)``,
    ``sync()``, ``sync_aligned()`` (every member reaches it: the same barrier), ``is_member()``;
    an error naming what there is where the group has no such query."""
    base = {"sync_aligned": "sync"}.get(name, name[:-3] if name.endswith("_as") else name)
    args, kws, dtype = list(args), dict(kws), None
    if name.endswith("_as"):
        dtype = args.pop(0) if args else kws.pop("dtype", None)
    level = args[0] if args else kws.get(
        "level", None if base in ("sync", "is_member") else "thread")
    helper = query(group.kind, group.width, base, level, group.exhaustive) \
        if UNKNOWN not in (level, dtype) else None
    if helper is None:
        unserved = UNSERVED.get(group.kind)
        raise (CoopgenUnsupported if unserved else CoopgenError)(
            f"coop.{group.describe()}.{name}: not available for this group"
            + (f" at level={level!r}" if level is not None else "")
            + " in kernels (rank/count at the levels thread, warp, block and grid down to the "
              "group's own, sync, is_member" + (f"; this group {unserved}" if unserved else "")
            + ")")
    return (*helper, dtype)


def _fixed(helper):
    return lambda width, exhaustive: (helper, ())


def _sized(helper, scale=1):
    return lambda width, exhaustive: (helper, (scale * width,))


#: (finer, coarser) -> (rank's, count's (helper, constants) of the group's width)
RANKS = {
    ("thread", "threads_within_warp"): (_sized("lane_modulo"), _sized("constant")),
    ("thread", "warp"): (_fixed("lane"), _fixed("warp_size")),
    ("thread", "warps_within_block"): (_sized("rank_modulo", WARP), _sized("constant", WARP)),
    ("thread", "block"): (_fixed("block_rank"), _fixed("block_count")),
    ("thread", "cluster"): (_fixed("cluster_thread_rank"), _fixed("cluster_thread_count")),
    ("thread", "grid"): (_fixed("grid_rank"), _fixed("grid_count")),
    ("threads_within_warp", "warp"): (_sized("lane_divided"),
                                      lambda width, _: ("constant", (WARP // width,))),
    ("warp", "warps_within_block"): (_sized("warp_rank_modulo"), _sized("constant")),
    ("warp", "block"): (_fixed("warp_rank"), _fixed("warp_count")),
    ("warps_within_block", "block"): (_sized("warp_rank_divided"),
                                      lambda width, exhaustive: ("mapped_groups",
                                                                 (width, exhaustive))),
    ("block", "cluster"): (_fixed("cluster_block_rank"), _fixed("cluster_block_count")),
    ("block", "grid"): (_fixed("grid_block_rank"), _fixed("grid_block_count")),
}

#: group kind -> its barrier's helper (a thread's: its warp's)
SYNCS = {"cluster": ("cluster_sync", ()), "block": ("block_sync", ()),
         "warps_within_block": ("block_sync", ()),
         "warp": ("warp_sync", ()), "threads_within_warp": ("warp_sync", ()),
         "thread": ("warp_sync", ())}


def for_backend(cuda_module, device_function, trap, cluster=(), own=None) -> dict:
    """{name: device function} compiled by ``device_function``, reading ``cuda_module`` as
    ``cuda``, ``trap`` (the backend's device trap), ``cluster`` (its CLUSTER_PTX statements),
    numpy and each other by name. ``own``: the backend's functions in place of helpers (or
    builtins, ``min``) of those names, which the others then call (a compiler that runs the
    helpers' Python as it traces gives its own for those that branch on a run-time value)."""
    own = dict(own or {})
    space = {"cuda": cuda_module, "WARP": WARP, "trap": trap, "np": np, **dict(cluster)}
    out = dict(cluster, **own)
    for name, fn in list(globals().items()):
        if isinstance(fn, types.FunctionType) and fn.__module__ == __name__ and \
                name not in ("for_backend", "query", "query_call", "_fixed", "_sized", *own):
            out[name] = device_function(types.FunctionType(fn.__code__, space, name,
                                                           fn.__defaults__))
    space.update(out)
    return out
