"""The supported-types table (docs/api/types.md and the "Types" section of help()) against
reality: for a sample of (primitive, item type) cells, a supported cell's kernel compiles and
links for sm_90, and a refused one (or a call its notes refuse) raises the reason the table
gives. The table itself is computed from the rules the runtime refuses calls by, so these
cells check both the table and the rules against CUB."""
import re

import numba
import numpy as np
import pytest
from numba import cuda
from numba.cuda import types

import coopgen
from coopgen import block, local, shared, warp
from coopgen.generator import cli, headers
from coopgen.generator.emit_types import columns, type_table
from coopgen.linkcheck import link_cubin
from coopgen.types.cpp import CPP_OF

ENTRY = headers.load_lock()[0]  # the runtime's default release
RECORD = np.dtype([("a", np.int32), ("b", np.float32)], align=True)
#: A dtype of each sampled column, as kernels allocate it.
DTYPES = {"bool": np.bool_, "float16": np.float16, "bfloat16": numba.cuda.bfloat16,
          "complex64": np.complex64, "complex128": np.complex128, "records": RECORD,
          "vector types": numba.cuda.float32x2, "float32/float64": np.float64,
          "integers": np.int16}


@pytest.fixture(scope="module")
def table():
    return type_table(ENTRY, cli.load_model(ENTRY))


@cuda.jit(device=True)
def pick(a, b):
    return a


@cuda.jit(device=True)
def real_less(a, b):
    return a.real < b.real


@cuda.jit(device=True)
def field_less(a, b):
    return a.a < b.a


def _kernel(call: str, dtype):
    """A tile of ``dtype`` items per thread, passed to one call; d_out gets a result."""
    def k(d_out):
        items = local.array(4, dtype)
        flags = local.array(4, np.int32)
        if call == "radix":
            block.radix_sort_keys(items)
        elif call == "radix_by_fields":
            block.radix_sort_keys(items, decomposer=("a", "b"))
        elif call == "sum":
            total = block.sum(items)
            items[0] = total
        elif call == "reduce_fn":
            items[0] = block.reduce(items, 4, pick)
        elif call == "reduce_min":
            items[0] = block.reduce(items, 4, "min")
        elif call == "reduce_max":
            items[0] = block.reduce(items, 4, "max")
        elif call == "warp_max":
            items[0] = warp.max(items[0])
        elif call == "faithful_max":
            items[0] = warp.WarpReduce.Max(items[0])
        elif call == "merge_real":
            block.merge_sort_keys(items, 4, real_less)
        elif call == "merge_fields":
            block.merge_sort_keys(items, 4, field_less)
        elif call == "exchange":
            block.exchange(items, block_exchange_type="BlockedToStriped")
        elif call == "warp_exclusive_sum":
            items[0] = warp.exclusive_sum(items[0])
        elif call == "heads":
            block.discontinuity(items, flags, flag_op="!=")
        elif call == "histogram":
            counts = shared.array(16, np.int32)
            block.BlockHistogram.Histogram(items, counts)
        elif call == "warp_shuffle_exchange":
            warp.exchange(items, threads_in_warp=8, warp_exchange_algorithm="shuffle")
        d_out[cuda.threadIdx.x] = flags[0]
    return k


def _link(call: str, column: str):
    with coopgen.block_shape(128):
        return link_cubin(_kernel(call, DTYPES[column]), (types.int32[::1],))


def _reason(text: str) -> str:
    """What of a cell's text the runtime's message holds too: the reason after the items
    ("these items" in the table, the dtype's name in the message)."""
    tail = text.rsplit("these items", 1)[-1]
    return tail.split(": ", 1)[1] if ": " in tail else tail


#: (table row, column, the call): the cell decides whether the call links or is refused.
CELLS = [("block.radix_sort_keys", "float16", "radix"),
         ("block.radix_sort_keys", "bool", "radix"),
         ("block.radix_sort_keys", "complex64", "radix"),
         ("block.radix_sort_keys", "vector types", "radix"),
         ("block.radix_sort_keys", "records", "radix_by_fields"),
         ("block.sum", "complex128", "sum"),
         ("block.sum", "vector types", "sum"),
         ("block.sum", "records", "sum"),
         ("block.reduce", "complex64", "reduce_fn"),
         ("block.reduce", "bfloat16", "reduce_max"),
         ("warp.max", "complex64", "warp_max"),
         ("warp.max", "float16", "warp_max"),
         ("warp.WarpReduce.Max", "records", "faithful_max"),
         ("block.merge_sort_keys", "complex128", "merge_real"),
         ("block.merge_sort_keys", "records", "merge_fields"),
         ("block.exchange", "vector types", "exchange"),
         ("warp.exclusive_sum", "float16", "warp_exclusive_sum"),
         ("block.BlockHistogram.Histogram", "float32/float64", "histogram"),
         ("block.BlockHistogram.Histogram", "bfloat16", "histogram")]
#: (table row, column, a call one of the supported cell's notes refuses).
NOTED = [("block.radix_sort_keys", "records", "radix"),
         ("block.radix_sort_keys", "integers", "radix_by_fields"),
         ("block.reduce", "complex64", "reduce_min"),
         ("block.discontinuity", "records", "heads"),
         ("warp.exchange", "complex128", "warp_shuffle_exchange")]


def _cell(table, row: str, column: str):
    labels = [label for label, _ in columns()]
    return table.row(row).cells[labels.index(column)]


@pytest.mark.parametrize("row, column, call", CELLS, ids=[f"{r}-{c}" for r, c, _ in CELLS])
def test_cell_against_a_kernel(table, row, column, call):
    cell = _cell(table, row, column)
    if not cell.refused:
        assert _link(call, column).kernel.local_bytes == 0
        return
    with pytest.raises(Exception, match=re.escape(_reason(cell.refused[0]))):
        _link(call, column)


@pytest.mark.parametrize("row, column, call", NOTED, ids=[f"{r}-{c}" for r, c, _ in NOTED])
def test_noted_call_is_refused_with_the_note(table, row, column, call):
    cell = _cell(table, row, column)
    assert not cell.refused and cell.notes
    with pytest.raises(Exception) as info:
        _link(call, column)
    assert any(_reason(note) in str(info.value) for note in cell.notes), str(info.value)


def test_sample_has_both_answers(table):
    """The sample above holds supported and refused cells (a table of one answer would pass
    the kernel test vacuously)."""
    answers = [bool(_cell(table, r, c).refused) for r, c, _ in CELLS]
    assert 4 <= sum(answers) <= len(answers) - 4


def test_every_dtype_has_one_column():
    named = [str(d) for _, dtypes in columns() for d in dtypes]
    assert sorted(n for n in named if n in CPP_OF) == sorted(CPP_OF)
    assert len(named) == len(set(named)) == len(CPP_OF) + 2  # and a record, a struct


def test_help_names_the_types():
    doc = block.radix_sort_keys.__doc__
    section = doc.split("## Types\n", 1)[1].split("\n## ", 1)[0]
    assert "- complex64, complex128, vector types: refused: " in section
    assert "CUB's radix sort orders keys by their bits" in section
    assert "- structs: refused: " in section
    assert "## Types" in warp.WarpReduce.Max.__doc__ and "## Types" in block.BlockScan.__doc__
