"""cub::detail classes bound as unstable (block_topk, BlockLoadToShared): a kernel calling
block_topk links for sm_80 and sm_90, the method template keyword is_full_tile= is required
and checked, their docstrings warn, and coopgen.coop does not offer them."""
import numpy as np
import pytest
from numba.core.errors import TypingError
from numba.cuda.core.errors import TypingError as CudaTypingError
from numba.cuda import types

from coopgen import block, block_shape, coop, local
from coopgen.linkcheck import link_cubin
from coopgen.model import registry

F32, I32 = types.float32[::1], types.int32[::1]
pytestmark = pytest.mark.skipif("block_topk" not in registry.classes(),
                                reason="this CCCL has no cub::detail::block_topk")


def topk_kernel(keys_in, vals_out, n):
    keys = local.array(8, np.float32)
    vals = local.array(8, np.int32)
    for i in range(8):
        keys[i] = keys_in[i]
        vals[i] = i
    block.block_topk.max_pairs(keys, vals, 16, n, is_full_tile=False)
    block.block_topk.min_keys(keys, 4, 1024, is_full_tile=True)
    for i in range(8):
        keys_in[i] = keys[i]
        vals_out[i] = vals[i]


@pytest.mark.parametrize("arch", [(8, 0), (9, 0)], ids=["sm_80", "sm_90"])
def test_a_kernel_calling_block_topk_links(arch):
    with block_shape(128):
        res = link_cubin(topk_kernel, (F32, I32, types.int32), arch=arch)
    assert res.local_bytes == 0 and res.spill_stores == 0


@pytest.mark.parametrize("given,error", [
    ("", "missing required argument is_full_tile="),
    (", is_full_tile=1", "is_full_tile=1 must be True or False"),
])
def test_is_full_tile_is_a_required_bool(given, error, tmp_path):
    src = (f"import numpy as np\nfrom coopgen import block, local\n"
           f"def k(x):\n    keys = local.array(4, np.int32)\n"
           f"    block.block_topk.max_keys(keys, 2, 512{given})\n")
    path = tmp_path / "k.py"
    path.write_text(src, encoding="utf-8")
    scope: dict = {}
    exec(compile(src, str(path), "exec"), scope)
    with block_shape(128), pytest.raises((TypingError, CudaTypingError), match=error):
        link_cubin(scope["k"], (I32,))


def test_unstable_classes_warn_and_stay_out_of_coop():
    for name in ("block_topk", "BlockLoadToShared"):
        assert registry.classes()[name].unstable
        assert "**Unstable:**" in getattr(block, name).__doc__
        assert not hasattr(coop.block, name)
    assert "**Unstable:**" in block.block_topk.max_keys.__doc__
    assert block.block_topk(np.float32, threads_per_block=128,
                            items_per_thread=8).temp_storage_bytes > 0
