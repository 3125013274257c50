"""cuda.coop's run-length decoding semantics on top of CUB's decoder, checked without a GPU: a
numpy model of ``cub::BlockRunLengthDecode`` (its constructor from run lengths and its
``RunLengthDecode``, read from block_run_length_decode.cuh) stands in for the shim, and the group
rewrite's own device helpers (window_mask, decode_into) run as Python, thread by thread. The
answers are NVIDIA's oracles: the decoded window, zero items and all-ones relative offsets past
the decoded size, every window of ``run_length_decode_into``. tests/gpu/group_cases.py checks the
same on a GPU."""
from types import SimpleNamespace

import numpy as np
import pytest

from coopgen.resolve import group_helpers


class Cast(np.ndarray):
    """An array whose stores convert as a kernel's do (-1 into uint32 is 0xFFFFFFFF)."""

    def __setitem__(self, index, value):
        super().__setitem__(index, np.array(value).astype(self.dtype))


def cast(shape, dtype, fill=0):
    return np.full(shape, fill, dtype).view(Cast)


class CubDecoder:
    """``cub::BlockRunLengthDecode<ItemT, threads, runs, items, DecodedOffsetT>`` made on the
    block's runs: the exclusive sum of the lengths in DecodedOffsetT, then each thread's window by
    StaticUpperBound and the run-advance loop of RunLengthDecode."""

    def __init__(self, cuda, values, lengths, offset_dtype):
        self.cuda, self.values = cuda, values
        self.mask = (1 << (8 * np.dtype(offset_dtype).itemsize)) - 1
        wide = [int(n) & self.mask for n in lengths]  # static_cast<DecodedOffsetT>(length)
        self.offsets = [sum(wide[:i]) & self.mask for i in range(len(wide))]
        self.total = sum(wide) & self.mask

    def decode(self, items, window_offset, relative):
        runs, n = len(self.offsets), items.shape[0]
        tdo = (int(window_offset) + self.cuda.threadIdx.x * n) & self.mask
        run = sum(1 for o in self.offsets if o <= tdo) - 1  # StaticUpperBound - 1

        def bounds(r):
            return self.offsets[r], (tdo + n if r == runs - 1 else self.offsets[r + 1])
        begin, end = bounds(run)
        for i in range(n):
            items[i], relative[i] = self.values[run], (tdo - begin) & self.mask
            if i + 1 < n and tdo == end - 1:
                run += 1
                begin, end = bounds(run)
            tdo = (tdo + 1) & self.mask


def block(threads):
    """The helpers as one block's threads run them: (helpers, cuda, set_thread)."""
    cuda = SimpleNamespace(threadIdx=SimpleNamespace(x=0, y=0, z=0),
                           blockDim=SimpleNamespace(x=threads, y=1, z=1))
    def trap():
        raise AssertionError("a run-time check trapped")
    return group_helpers.for_backend(cuda, lambda fn: fn, trap), cuda


def decode_window(values, lengths, threads, items, offset, offset_dtype=np.uint64,
                  relative_dtype=np.uint32):
    """What coopgen's run_length_decode gives: (decoded window, relative offsets, sizes)."""
    helpers, cuda = block(threads)
    decoder = CubDecoder(cuda, values, lengths, offset_dtype)
    out, rel, sizes = [], [], []
    for t in range(threads):
        cuda.threadIdx.x = t
        decoded, relative = cast(items, values.dtype), cast(items, relative_dtype)
        size = cast(1, np.uint64, decoder.total)
        decoder.decode(decoded, offset, relative)
        helpers["window_mask"](decoded, relative, offset, size)
        out.append(decoded), rel.append(relative), sizes.append(int(size[0]))
    return np.concatenate(out), np.concatenate(rel), sizes


def oracle(values, lengths, threads, items, offset, relative_dtype=np.uint32):
    """NVIDIA's: the decoded items from ``offset``, then zero items and all-ones offsets."""
    decoded = np.repeat(values, np.asarray(lengths, dtype=np.int64))
    relative = np.concatenate([np.arange(int(n)) for n in lengths])
    out = np.zeros(threads * items, values.dtype)
    rel = np.full(threads * items, -1).astype(relative_dtype)
    valid = max(0, min(threads * items, len(decoded) - offset))
    out[:valid] = decoded[offset:offset + valid]
    rel[:valid] = relative[offset:offset + valid].astype(relative_dtype)
    return out, rel


def padded(prefix, runs, dtype=np.uint32):
    lengths = np.zeros(runs, dtype)
    lengths[:len(prefix)] = prefix
    return lengths


@pytest.mark.parametrize("prefix", [[], [3, 2], [1] * 64, [10, 200, 4]])
@pytest.mark.parametrize("offset", [0, 2, "end", "end+1", 2**32 + 2])
def test_window_is_cuda_coops(prefix, offset):
    """test_run_length.py's windows: 32 threads, 3 items each, trailing zero-length runs."""
    values = np.arange(64, dtype=np.int8) + 7
    lengths = padded(prefix, 64, np.uint16)
    total = sum(prefix)
    offset = {"end": total, "end+1": total + 1}.get(offset, offset)
    out, rel, sizes = decode_window(values, lengths, 32, 3, offset)
    want, want_rel = oracle(values, lengths, 32, 3, offset)
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(rel, want_rel)
    assert sizes == [total] * 32


def test_cub_alone_leaves_padding_values_past_the_end():
    """Why coopgen masks the window: CUB's items past the decoded size are the values of the
    zero-length padding runs (the first one's after a thread's last item, the last one's in a
    window that starts past the end)."""
    values, lengths = np.arange(1, 9, dtype=np.int32), padded([2, 3], 8)
    _, cuda = block(3)
    decoder = CubDecoder(cuda, values, lengths, np.uint32)
    got = []
    for t in (1, 2):
        cuda.threadIdx.x, items = t, cast(4, np.int32)
        decoder.decode(items, 0, cast(4, np.uint32))
        got.append(list(items))
    assert got == [[2, 3, 3, 3], [8, 8, 8, 8]]  # decoded item 4 is 2; the rest is padding


@pytest.mark.parametrize("length_dtype", [np.int64, np.uint64])
def test_largest_total_keeps_the_last_five_items(length_dtype):
    """test_common_root_run_length_decode's 64-bit boundary: one run of the dtype's maximum,
    the window five items before its end (64 threads, 3 items each)."""
    values = np.arange(128, dtype=np.uint8)
    values[0] = 42
    top = int(np.iinfo(length_dtype).max)
    lengths = padded([top], 128, length_dtype)
    out, rel, sizes = decode_window(values, lengths, 64, 3, top - 5, relative_dtype=length_dtype)
    want_rel = np.full(192, -1).astype(length_dtype)
    want_rel[:5] = np.arange(top - 5, top, dtype=np.uint64).astype(length_dtype)
    np.testing.assert_array_equal(out[:5], [42] * 5)
    assert not out[5:].any()
    np.testing.assert_array_equal(rel, want_rel)
    assert sizes == [top] * 64


def test_offset_near_the_uint64_end_masks_all():
    """An offset whose window would wrap in 64 bits gives zeros, not the first runs."""
    values, lengths = np.arange(128, dtype=np.uint8), padded([2, 1, 3, 4, 1, 2, 3], 128, np.uint64)
    out, rel, _ = decode_window(values, lengths, 64, 3, 2**64 - 5, relative_dtype=np.uint64)
    assert not out.any() and (rel == np.iinfo(np.uint64).max).all()


def test_uint32_decoded_offsets_wrap_where_cuda_coop_says_they_do():
    """With decoded_offset_dtype=uint32 given, a size past 2**32 wraps in CUB (as cuda.coop's
    uint32 default would): coopgen's uint64 default is what keeps it."""
    values, lengths = np.arange(32, dtype=np.int32), padded([2**32 - 2, 4], 32, np.uint64)
    *_, wrapped = decode_window(values, lengths, 32, 2, 0, offset_dtype=np.uint32)
    *_, kept = decode_window(values, lengths, 32, 2, 0)
    assert wrapped[0] == 2 and kept[0] == 2**32 + 2


@pytest.mark.parametrize("threads", [32, 37])
@pytest.mark.parametrize("prefix", [[], [3, 2], "fours", [1, 401, 3]])
@pytest.mark.parametrize("with_relative", [False, True])
def test_decode_into_stores_every_window(threads, prefix, with_relative):
    """test_run_length.py's bulk decode: 3 items a thread, from 3 items into the destination;
    nothing before or after the decoded items changes."""
    prefix = [4] * (threads * 2) if prefix == "fours" else prefix
    values = np.arange(threads * 2, dtype=np.int16) + 7
    lengths = padded(prefix, threads * 2)
    decoded = np.repeat(values, lengths.astype(np.int64))
    out = cast(decoded.size + 10, np.int16, -1)
    rel_out = cast(decoded.size + 10, np.uint64, 9999)
    helpers, cuda = block(threads)
    decoder = CubDecoder(cuda, values, lengths, np.uint64)
    totals = []
    for t in range(threads):  # RunLengthDecode reads the runs' table only: thread by thread
        cuda.threadIdx.x = t
        totals.append(helpers["decode_into"](
            decoder, cast(3, np.int16), cast(3, np.uint64), cast(1, np.uint64, decoder.total),
            out, rel_out if with_relative else cast(1, np.uint64), 3, with_relative))
    np.testing.assert_array_equal(out[3:3 + decoded.size], decoded)
    assert (out[:3] == -1).all() and (out[3 + decoded.size:] == -1).all()
    assert totals == [decoded.size] * threads
    if with_relative:
        want = np.concatenate([np.arange(n) for n in prefix]) if prefix else []
        np.testing.assert_array_equal(rel_out[3:3 + decoded.size], want)
        assert (rel_out[:3] == 9999).all() and (rel_out[3 + decoded.size:] == 9999).all()
    else:
        assert (rel_out == 9999).all()


class Trap(Exception):
    pass


class ThreadedBlock:
    """A block whose threads run a helper at once, as Python threads: ``syncthreads`` a barrier,
    ``shfl_down_sync`` a warp's values swapped between two barriers of its lanes."""

    def __init__(self, threads):
        self.threads, self.mine, self.values = threads, __import__("threading").local(), {}
        threading = __import__("threading")
        self.barrier = threading.Barrier(threads)
        self.warps = [threading.Barrier(min(32, threads - w)) for w in range(0, threads, 32)]
        self.blockDim = SimpleNamespace(x=threads, y=1, z=1)

    @property
    def threadIdx(self):
        return SimpleNamespace(x=self.mine.rank, y=0, z=0)

    def syncthreads(self):
        self.barrier.wait()

    def shfl_down_sync(self, mask, value, step):
        rank = self.mine.rank
        lanes = self.warps[rank // 32]
        self.values[rank] = value
        lanes.wait()
        source = rank + step
        got = self.values[source] if source // 32 == rank // 32 and source < self.threads \
            else value
        lanes.wait()
        return got

    def run(self, body) -> list:
        """``body(rank)`` in every thread; the exceptions raised (a trap breaks the barriers)."""
        import threading
        errors = []

        def thread(rank):
            self.mine.rank = rank
            try:
                body(rank)
            except Exception as e:  # noqa: BLE001 (collected, then asserted)
                errors.append(e)
                for b in [self.barrier, *self.warps]:
                    b.abort()
        started = [threading.Thread(target=thread, args=(r,)) for r in range(self.threads)]
        for t in started:
            t.start()
        for t in started:
            t.join()
        return errors


def check_runs(lengths, threads, bits, runs=2):
    """Whether group_helpers.check_run_lengths traps on these runs (``runs`` a thread)."""
    cuda = ThreadedBlock(threads)

    def trap():
        raise Trap()
    helpers = group_helpers.for_backend(cuda, lambda fn: fn, trap)
    slots = np.zeros(96, np.int64)
    errors = cuda.run(lambda rank: helpers["check_run_lengths"](
        lengths[rank * runs:(rank + 1) * runs], slots, bits))
    return any(isinstance(e, Trap) for e in errors)


@pytest.mark.parametrize("threads", [32, 37, 64])
@pytest.mark.parametrize("case, bits, traps", [
    ("negative", 32, True), ("interior_zero", 32, True),
    ("zero_then_run_in_a_later_warp", 64, True),
    ("sum_over_32_bits", 32, True), ("one_over_32_bits", 32, True), ("sum_over_64_bits", 64, True),
    ("padding", 32, False), ("all_empty", 32, False), ("sum_of_32_bits", 32, False),
    ("sum_of_64_bits", 64, False), ("every_run_used", 32, False)])
def test_run_length_preconditions(threads, case, bits, traps):
    """test_run_length.py's invalid inputs trap, and the runs at the limits do not: no negative
    run, no empty run before a used one (across threads and warps too), the sum within the
    decoded offsets' type (each run alone too)."""
    n = threads * 2
    lengths = np.zeros(n, np.int64 if case == "negative" else np.uint64)
    lengths[:3] = [3, 2, 4]
    if case == "negative":
        lengths[1] = -1
    elif case == "interior_zero":
        lengths[1] = 0
    elif case == "zero_then_run_in_a_later_warp":
        lengths[n - 1] = 7
    elif case in ("sum_over_32_bits", "sum_of_32_bits"):
        lengths[:3] = [2**32 - 3, 2, case == "sum_over_32_bits"]
    elif case == "one_over_32_bits":
        lengths[:3] = [2**32, 0, 0]
    elif case in ("sum_over_64_bits", "sum_of_64_bits"):
        lengths[:3] = [2**63, 2**63 - 2, 1 + (case == "sum_over_64_bits")]
    elif case == "all_empty":
        lengths[:] = 0
    elif case == "every_run_used":
        lengths[:] = 5
    assert check_runs(lengths, threads, bits) == traps


@pytest.mark.parametrize("first, size, traps", [(0, 9, False), (3, 6, False), (0, 10, True),
                                                 (4, 6, True), (10, 0, True)])
def test_destination_room_is_checked_before_writing(first, size, traps):
    """run_length_decode_into's destination (and relative offsets) hold every decoded item."""
    def trap():
        raise Trap()
    helpers = group_helpers.for_backend(SimpleNamespace(), lambda fn: fn, trap)
    if traps:
        with pytest.raises(Trap):
            helpers["check_capacity"](np.zeros(9), np.uint64(first), np.uint64(size))
    else:
        helpers["check_capacity"](np.zeros(9), np.uint64(first), np.uint64(size))
