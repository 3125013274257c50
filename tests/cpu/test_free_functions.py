"""CUB's free functions in the runtime: a call resolves to a plan with no object and no temp
storage, its shim calls ``::cub::Name<explicit arguments>(...)`` with the thread's rank where
CUB wants ``linear_tid``, thread counts come from the launch, a value stored through a pointer
takes the array's type, cache modifiers are an enum, and bad input is a clear error."""
import numpy as np
import pytest
from numba import cuda, types
from numba.core.errors import TypingError

import coopgen
import coopgen.enums
from coopgen import block, local, thread, warp
from coopgen.codegen import shims
from coopgen.resolve.call import resolve_call
from coopgen.types.desc import Array, Literal, Scalar

I32 = Scalar("int32")
TILE = Array(I32)  # a device array (a slice of one)
ITEMS = Array(I32, length=4, space="local")


def shim(prim, args, kws=None, block_dims=(128, 1, 1)) -> tuple:
    plan = resolve_call(prim, args, kws or {}, block_dims=block_dims)
    return plan, shims.build(plan, {})


def test_a_striped_load_is_one_call_with_the_block_size_and_the_threads_rank():
    plan, s = shim(block.load_direct_striped, (TILE, ITEMS))
    assert plan.temp_storage == "none" and plan.cls.function
    assert "::cub::LoadDirectStriped<128>((threadIdx.x + blockDim.x * (threadIdx.y" in s.source
    assert "coopgen_p" not in s.source and s.block_storage is None
    # a 2-D block: block_threads is the product
    assert "LoadDirectStriped<256>" in shim(block.LoadDirectStriped, (TILE, ITEMS),
                                            block_dims=(32, 8, 1))[1].source


def test_a_given_linear_tid_is_passed_through():
    _, s = shim(block.LoadDirectBlocked, (), {"linear_tid": I32, "block_src_it": TILE,
                                              "dst_items": ITEMS})
    assert "::cub::LoadDirectBlocked(linear_tid, block_src_it" in s.source


def test_cache_modifiers_are_template_arguments():
    plan, s = shim(thread.load, (TILE,), {"modifier": Literal("cs")})
    assert "::cub::ThreadLoad<cub::LOAD_CS>(itr)" in s.source
    assert plan.returns[0][1] == I32  # the iterator's value type
    enum = coopgen.enums.CacheStoreModifier
    _, s = shim(thread.store, (TILE, Scalar("float64")), {"modifier": Literal(enum.CS)})
    assert "::cub::ThreadStore<cub::STORE_CS>(itr, val)" in s.source
    assert thread.CacheLoadModifier is coopgen.enums.CacheLoadModifier
    assert {"CS", "LDG", "VOLATILE"} <= set(coopgen.enums.CacheLoadModifier.__members__)


def test_a_stored_value_takes_the_arrays_type():
    """CUB's ThreadStore<MODIFIER>(itr, T val) writes sizeof(T) bytes: a float64 value stored
    into an int32 array is converted first, never written as 8 bytes."""
    plan, _ = shim(thread.store, (TILE, Scalar("float64")))
    val = next(b for b in plan.bindings if b.param.name == "val")
    assert val.ctype == "int"


def test_shuffles_default_to_the_whole_warp():
    _, s = shim(warp.shuffle_up, (Scalar("float64"), Literal(1, I32)))
    assert "::cub::ShuffleUp<32>(input, src_offset, first_thread, member_mask)" in s.source
    _, s = shim(warp.shuffle_index, (Scalar("int64"), Literal(3, I32)),
                {"threads_in_warp": Literal(16, I32)})
    assert "::cub::ShuffleIndex<16>(" in s.source


def test_thread_reduce_returns_the_items_type():
    plan, s = shim(thread.reduce, (ITEMS, Literal("+")))
    assert plan.returns[0][1] == I32
    assert "::cub::ThreadReduce(" in s.source


def test_a_concrete_overload_wins_over_the_template():
    plan, _ = shim(thread.upper_bound, (TILE, I32, Scalar("float16")))
    assert plan.method.signature.endswith("__half)")


def test_free_functions_stay_out_of_cuda_coop():
    assert not hasattr(coopgen.coop.block, "load_direct_striped")
    assert hasattr(block, "load_direct_striped") and hasattr(block, "LoadDirectStriped")


def test_an_unknown_modifier_names_the_allowed_ones():
    @cuda.jit
    def k(d):
        d[1] = thread.load(d, modifier="bogus")

    with coopgen.block_shape(128), pytest.raises(TypingError, match=(
            r"thread.load: unknown modifier='bogus'; allowed: 'default', 'ca', 'cg', 'cs'")):
        cuda.compile_all(k, (types.int32[::1],), device=False, abi="numba", cc=(9, 0),
                         output="ltoir")


def test_a_missing_argument_is_named():
    @cuda.jit
    def k(d):
        items = local.array(4, np.int32)
        block.load_direct_blocked(items)

    with coopgen.block_shape(128), pytest.raises(TypingError, match="block.load_direct_blocked"):
        cuda.compile_all(k, (types.int32[::1],), device=False, abi="numba", cc=(9, 0),
                         output="ltoir")
