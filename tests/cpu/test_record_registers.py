"""Records (numpy structured dtypes) as a primitive's T stay in registers as whole numbers:
the C++ struct coopgen declares for a record has typed members at numpy's offsets, so CUB's
copies, shuffles and shared-memory exchanges move floats and ints, never bytes."""
import re

import numba
import numpy as np
from numba import cuda

from coopgen import block, block_shape, local
from coopgen.lower.describe import dtype_of
from coopgen.types.cpp import struct_decl


def record_struct(rec):
    return struct_decl(dtype_of(rec))
from coopgen.linkcheck import link_cubin, link_ptx

PAIR = np.dtype([("a", np.float32), ("b", np.float32)], align=True)
MIXED = np.dtype([("flag", np.int8), ("x", np.float64), ("n", np.int32)], align=True)
PACKED = np.dtype([("flag", np.int8), ("x", np.float32)], align=False)


@cuda.jit(device=True, inline="always")
def compose(x, y, out):
    out.a = x.a * y.a
    out.b = y.a * x.b + y.b


def record_scan(d_in, d_out):
    items = local.array(8, PAIR)
    block.load(d_in, items, algorithm="warp_transpose")
    block.inclusive_scan(items, items, scan_op=compose)
    block.store(d_out, items, algorithm="warp_transpose")


def _entry(ptx: str) -> str:
    start = ptx.index(".entry")
    return ptx[start:ptx.index("\n}\n", start)]


def test_record_scan_moves_no_bytes():
    sig = (numba.typeof(np.empty(1, PAIR)),) * 2
    with block_shape(128):
        body = _entry(link_ptx(record_scan, sig))
        res = link_cubin(record_scan, sig)
    assert res.local_bytes == 0
    byte_ops = re.findall(r"\b(?:prmt\.b32|cvt\.u16\.u32|cvt\.u32\.u16|st(?:\.shared)?\.v4\.u8)\b",
                          body)
    assert byte_ops == []


def test_record_structs_keep_numpy_layout():
    # Typed members where natural alignment reproduces numpy's offsets and padding ...
    assert "float m0; float m1;" in record_struct(numba.from_dtype(PAIR))
    mixed = record_struct(numba.from_dtype(MIXED))
    assert "signed char m0; unsigned char pad1[7]; double m1; int m2; unsigned char pad_end[4];" \
        in mixed and "alignas(8)" in mixed
    # ... and numpy's bytes where it cannot (a packed record's float sits at offset 1).
    assert "unsigned char bytes[5];" in record_struct(numba.from_dtype(PACKED))
