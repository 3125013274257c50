"""Storage past the 48 KB static limit moves to dynamic shared memory; the linked cubin says how
much the launch must add. Checked without a GPU: kernels are linked for sm_90."""
from types import SimpleNamespace

import numpy as np
import pytest
from llvmlite import ir
from numba import cuda
from numba.cuda.cudadrv.linkable_code import LTOIR
from numba.cuda import types

import coopgen
from coopgen import block, block_shape, coop, local, shared
from coopgen.lower import launch_hook
from coopgen.linkcheck import launch_config_on_cpu, link_cubin
from coopgen.codegen.placement import STATIC_SHARED_LIMIT, dynamic_requirement, launch_bytes
from coopgen.lower.shared_memory import static_shared_bytes

I64 = (types.int64[::1], types.int64[::1])
big_ts = coopgen.TempStorage()


def sort_1024x16(d_in, d_out):
    items = local.array(16, np.int64)
    base = cuda.blockIdx.x * 1024 * 16
    block.load(d_in[base:], items, algorithm="warp_transpose")
    block.radix_sort_keys(items)
    block.store(d_out[base:], items, algorithm="warp_transpose")


def sort_with_temp_storage(d_in, d_out):
    items = local.array(16, np.int64)
    block.load(d_in, items)
    block.radix_sort_keys(items, temp_storage=big_ts)
    block.store(d_out, items)


def sort_beside_numba_arrays(d_in, d_out):
    mine = cuda.shared.array(10000, np.float32)  # 40000 bytes of the kernel's own
    dynamic = cuda.shared.array(0, np.int32)  # and dynamic shared memory of its own
    items = local.array(16, np.int64)
    mine[cuda.threadIdx.x] = 1
    dynamic[cuda.threadIdx.x] = 2
    block.load(d_in, items)
    block.radix_sort_keys(items)
    block.store(d_out, items)
    d_out[0] += mine[cuda.threadIdx.x + 1] + dynamic[cuda.threadIdx.x + 1]


def small_sort(d_in, d_out):
    items = local.array(4, np.int64)
    block.load(d_in, items, algorithm="warp_transpose")
    block.radix_sort_keys(items)
    block.store(d_out, items)


ARRAY_BYTES = 140 * 1024  # enough for the radix sort's 132 KB


def sort_in_shared_array(d_in, d_out):
    temp = shared.array(ARRAY_BYTES, np.uint8)
    items = local.array(16, np.int64)
    block.load(d_in, items)
    block.radix_sort_keys(items, temp_storage=temp)
    block.store(d_out, items)


def sort_beside_data_array(d_in, d_out):
    data = shared.array(5000, np.float32)  # 20000 bytes: a member of coopgen's storage
    items = local.array(4, np.int64)
    data[cuda.threadIdx.x] = 1
    block.load(d_in, items, algorithm="warp_transpose")
    block.radix_sort_keys(items)
    block.store(d_out, items)
    d_out[0] += data[cuda.threadIdx.x + 1]


def reverse_in_shared_array(d_in, d_out):
    buf = shared.array((128, 128), np.float64)  # 128 KB and no primitive at all
    t = cuda.threadIdx.x
    for i in range(128):
        buf[t, i] = d_in[t * 128 + i]
    cuda.syncthreads()
    for i in range(128):
        d_out[t * 128 + i] = buf[127 - t, 127 - i]


def _largest_storage(threads, items):
    """(bytes, alignment) of the implicit storage of sort_1024x16 with this tile."""
    tile = dict(threads_per_block=threads, items_per_thread=items)
    return coopgen.kernel_temp_storage(
        block.BlockRadixSort(np.int64, **tile),
        block.BlockLoad(np.int64, **tile, algorithm="warp_transpose"),
        block.BlockStore(np.int64, **tile, algorithm="warp_transpose"))


def test_block_storage_past_the_limit_is_dynamic():
    with block_shape(1024):
        res = link_cubin(sort_1024x16, I64)
    size, align = _largest_storage(1024, 16)
    assert size > STATIC_SHARED_LIMIT
    assert res.smem == 0 and res.local_bytes == 0
    # compile_all drops the kernel's library before the link, so coopgen cannot tell whether
    # the kernel uses the launch's dynamic memory: its storage goes after those bytes
    assert dynamic_requirement(res.cubin) == (size, align, True)


def test_temp_storage_past_the_limit_is_dynamic():
    with block_shape(1024):
        res = link_cubin(sort_with_temp_storage, I64)
    sort = block.BlockRadixSort(np.int64, threads_per_block=1024, items_per_thread=16)
    size, align, _ = dynamic_requirement(res.cubin)
    assert res.smem == 0
    # the TempStorage, then the direct load's and store's (empty, 1-byte) implicit storage
    assert (size, align) == (sort.temp_storage_bytes + sort.temp_storage_alignment,
                             sort.temp_storage_alignment)


def test_numba_shared_arrays_count_toward_the_limit():
    with block_shape(256):
        res = link_cubin(sort_beside_numba_arrays, I64)
    sort = block.BlockRadixSort(np.int64, threads_per_block=256, items_per_thread=16)
    size, align = sort.temp_storage_bytes, sort.temp_storage_alignment  # direct load/store: 1
    assert size < STATIC_SHARED_LIMIT < size + 40000
    assert res.smem == 40000  # numba's array stays static; coopgen's storage moved out
    assert dynamic_requirement(res.cubin) == (size, align, True)


def test_large_shared_array_is_dynamic():
    with block_shape(1024):
        res = link_cubin(sort_in_shared_array, I64)
    size, align, _ = dynamic_requirement(res.cubin)
    assert res.smem == 0 and res.local_bytes == 0
    # the array, then the direct load's and store's (empty, 1-byte) implicit storage
    assert (size, align) == (ARRAY_BYTES + 16, 16)


def test_large_shared_array_alone_is_dynamic():
    sig = (types.float64[::1], types.float64[::1])
    with block_shape(128):
        res = link_cubin(reverse_in_shared_array, sig)
    assert res.smem == 0
    assert dynamic_requirement(res.cubin)[:2] == (128 * 128 * 8, 16)


def test_shared_array_in_static_storage():
    with block_shape(128):
        res = link_cubin(sort_beside_data_array, I64)
    assert dynamic_requirement(res.cubin) is None
    assert res.smem == 20000 + _largest_storage(128, 4)[0]


def test_small_storage_stays_static():
    with block_shape(128):
        res = link_cubin(small_sort, I64)
    assert dynamic_requirement(res.cubin) is None
    assert res.smem == _largest_storage(128, 4)[0]


def _kernel_library(pyfunc, threads):
    """The kernel's code library, compiled as a launch compiles it (and kept alive)."""
    from numba.cuda.compiler import compile_cuda, kernel_fixup

    with block_shape(threads):
        cres = compile_cuda(pyfunc, types.void, I64, cc=(9, 0))
    library = cres.library
    kernel_fixup(library.get_function(cres.fndesc.llvm_func_name), False)
    library._entry_name = cres.fndesc.llvm_func_name
    return library


def test_numba_cache_keeps_the_requirement():
    """What @cuda.jit(cache=True) stores (kernel_cache) relinks to the same requirement; the
    kernel uses no dynamic shared memory itself, so the storage sits at its base."""
    library = _kernel_library(sort_1024x16, 1024)
    loaded = type(library)._rebuild(**library._reduce_states())
    assert dynamic_requirement(loaded.get_cubin(cc=(9, 0))) == (*_largest_storage(1024, 16),
                                                                 False)


def test_a_kernel_using_dynamic_memory_keeps_its_bytes_first():
    library = _kernel_library(sort_beside_numba_arrays, 256)
    sort = block.BlockRadixSort(np.int64, threads_per_block=256, items_per_thread=16)
    assert dynamic_requirement(library.get_cubin(cc=(9, 0))) == (
        sort.temp_storage_bytes, sort.temp_storage_alignment, True)


def test_launch_bytes():
    # after the user's bytes, padded to the base's 16-byte alignment
    assert launch_bytes(0, (135184, 16, True)) == 135184
    assert launch_bytes(5, (1000, 16, True)) == 16 + 1000
    assert launch_bytes(32, (1000, 16, True)) == 32 + 1000
    assert launch_bytes(0, (1024, 64, True)) == 1024 + 48  # room to align to 64 from 16
    # at the base, over bytes the kernel does not use
    assert launch_bytes(0, (135184, 16, False)) == 135184
    assert launch_bytes(200000, (135184, 16, False)) == 200000


def test_static_shared_bytes_of_a_module():
    module = ir.Module()
    for name, ty, init in (("a", ir.ArrayType(ir.IntType(64), 1000), True),
                           ("b", ir.ArrayType(ir.FloatType(), 3), True),
                           ("c", ir.LiteralStructType([ir.IntType(8), ir.DoubleType()]), True),
                           ("dyn", ir.ArrayType(ir.IntType(8), 0), False)):
        gv = ir.GlobalVariable(module, ty, name, addrspace=3)
        if init:
            gv.initializer = ir.Constant(ty, ir.Undefined)
    ir.GlobalVariable(module, ir.IntType(32), "not_shared").initializer = ir.Constant(
        ir.IntType(32), 0)
    assert static_shared_bytes(module) == 8000 + 12 + 4 + 16


def test_launch_wrapper_follows_numba():
    """Fails, naming the method, if numba-cuda's launch path changes under the wrapper."""
    from numba.cuda.dispatcher import _Kernel

    launch_hook.check_internals()
    assert _Kernel._coopgen_launch_hook


def _fake_kernel(static, optin):
    device = SimpleNamespace(id=0, MAX_SHARED_MEMORY_PER_BLOCK_OPTIN=optin)
    cufunc = SimpleNamespace(device=device, attrs=SimpleNamespace(shared=static), handle=None)
    library = SimpleNamespace(get_cufunc=lambda: cufunc, name="sort_tiles")
    return SimpleNamespace(_codelibrary=library, py_func=sort_1024x16)


def test_past_the_device_opt_in_is_a_clear_error():
    kernel = _fake_kernel(static=1024, optin=232448)
    with pytest.raises(ValueError, match=r"kernel 'sort_1024x16' needs 271408 bytes of shared "
                                         r"memory per block .* more than the device max opt-in "
                                         r"of 232448 bytes"):
        launch_hook._set_max_dynamic_shared(kernel, 100, (270272, 16, True))


# -- cuda.coop's TempStorage(size_in_bytes) holds that many bytes: past 48 KB, dynamic memory ----

ABOVE_STATIC = 49 * 1024


def sum_in_sized_storage(d_in, d_out):
    temp = coop.TempStorage(ABOVE_STATIC, 16)
    d_out[cuda.threadIdx.x] = coop.block.sum(d_in[cuda.threadIdx.x], temp_storage=temp)


def _launch_on_cpu(kernel, block, *args):
    """(link result, launch configuration) of ``kernel[grid, block](*args)`` compiled for
    sm_90, the configuration with numba's ``sharedmem`` and ``pre_launch_callbacks``."""
    from numba.cuda.typing.typeof import typeof

    with launch_config_on_cpu(kernel, block, args) as cfg:
        cfg.sharedmem, cfg.pre_launch_callbacks = 0, []
        res = link_cubin(kernel, tuple(typeof(a) for a in args))
    return res, cfg


def _kernel_of(res):
    """A launched kernel as the launch hook reads it: its code library links coopgen's code."""
    library = SimpleNamespace(_linking_files={LTOIR(b"", name="coopgen-shims-k")},
                              get_cubin=lambda: res.cubin)
    return SimpleNamespace(_codelibrary=library)


def test_sized_temp_storage_is_dynamic_and_the_launch_reports_its_total():
    x = np.zeros(128, np.uint32)
    res, cfg = _launch_on_cpu(sum_in_sized_storage, 128, x, x)
    need = dynamic_requirement(res.cubin)
    assert res.smem == 0 and ABOVE_STATIC <= need[0] < ABOVE_STATIC + 64
    assert cfg.pre_launch_callbacks == [launch_hook.report_total]
    kernel = _kernel_of(res)
    for _ in range(2):  # each launch of the same configuration reports the same
        assert _launch_as_numba(kernel, cfg) == 0  # numba read 0, then the total: both ask 0
        assert cfg.sharedmem == launch_bytes(0, need) >= ABOVE_STATIC


def _launch_as_numba(kernel, cfg) -> int:
    """The user's dynamic bytes the launch hook finds for ``kernel[cfg]``, in numba's order: the
    configuration's size read, its pre-launch callbacks run, the launch given what was read."""
    read = cfg.sharedmem
    for callback in cfg.pre_launch_callbacks:
        callback(kernel, cfg)
    return launch_hook._requested(kernel, read)


@pytest.mark.parametrize("order", ["small big small", "big small big", "big big small small"])
@pytest.mark.parametrize("user_bytes", [0, 100, 60000])
def test_each_launch_of_one_configuration_gets_its_own_kernels_bytes(order, user_bytes):
    """One configuration (``kernel[grid, block]`` is cached) launches every specialization of its
    dispatcher: a kernel above 48 KB, then one in static memory, gets the user's bytes back."""
    rng = np.random.default_rng()
    needs = {"big": (int(rng.integers(49 * 1024, 200 * 1024)), 16, bool(rng.integers(2))),
             "small": None}
    cfg = SimpleNamespace(griddim=(3, 1, 1), blockdim=(512, 1, 1), sharedmem=user_bytes,
                          pre_launch_callbacks=[launch_hook.report_total])
    for size in order.split():
        kernel = SimpleNamespace(**{launch_hook._NEED: needs[size]})  # a new specialization
        for _ in range(2):  # and again, the configuration's bytes as the first launch left them
            assert _launch_as_numba(kernel, cfg) == user_bytes
            want = user_bytes if needs[size] is None else launch_bytes(user_bytes, needs[size])
            assert cfg.sharedmem == want


def test_the_report_keeps_the_users_bytes_and_the_dispatchers_key():
    from numba.cuda.dispatcher import CUDADispatcher

    kernel = SimpleNamespace(**{launch_hook._NEED: (70000, 16, True)})
    cfg = SimpleNamespace(griddim=(2, 1, 1), blockdim=(128, 1, 1), sharedmem=100)
    key = CUDADispatcher._launch_config_key(cfg)
    launch_hook.report_total(kernel, cfg)
    assert cfg.sharedmem == 112 + 70000  # the user's 100 bytes, padded, then the storage
    assert CUDADispatcher._launch_config_key(cfg) == key == ((2, 1, 1), (128, 1, 1), 100)
    assert launch_hook._requested(kernel, 100) == 100
    # a launch the report does not precede (another configuration) asks for its own bytes
    assert launch_hook._requested(kernel, 70112) == 70112


def test_a_kernel_without_dynamic_storage_reports_nothing():
    kernel = SimpleNamespace(**{launch_hook._NEED: None})
    cfg = SimpleNamespace(sharedmem=64)
    launch_hook.report_total(kernel, cfg)
    assert vars(cfg) == {"sharedmem": 64}
