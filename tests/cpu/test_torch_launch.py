"""examples/fast_launch.py and examples/torch_rms_norm.py without a GPU: the argument slots a
Launcher fills (numba's layout of an array argument), the views of tensors and
``__cuda_array_interface__`` objects, and the custom op traced by torch.export with its fake
implementation (one graph, no break). Skipped where PyTorch is absent; tests/gpu runs them."""
import ctypes
import sys
from pathlib import Path

import numba
import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import fast_launch  # noqa: E402
import torch_rms_norm  # noqa: E402


class _Interface:
    """A device array as numba or CuPy describe one: its ``__cuda_array_interface__``."""

    def __init__(self, shape, typestr, strides=None, ptr=0x7F0000001000):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides, "version": 3}


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32))
@pytest.mark.parametrize("shape", [(3, 4096), (2, 5, 1024), (7, 12)])
def test_array_slot_matches_numpy_view(shape, dtype):
    # The slot must hold what numba passes for the same memory seen as a flat uint32 array:
    # meminfo, parent, size, itemsize, data, shape, strides (bytes).
    t = torch.empty(shape, dtype=dtype)
    slot = fast_launch._ArraySlot(numba.types.uint32[::1], 4)
    slot.set(t, 0)
    words = np.empty(shape, np.dtype(str(dtype).removeprefix("torch.").replace("bfloat16",
                                                                               "float16")))
    words = words.view(np.uint32).reshape(-1)
    got = [v.value or 0 for v in slot.values]
    assert got == [0, 0, words.size, 4, t.data_ptr(), *words.shape, *words.strides]
    two_d = fast_launch._ArraySlot(numba.types.uint16[:, ::1], 2)
    two_d.set(t.view(-1, shape[-1]), 0)
    rows = np.empty((t.numel() // shape[-1], shape[-1] * t.element_size() // 2), np.uint16)
    assert [v.value or 0 for v in two_d.values] == [0, 0, rows.size, 2, t.data_ptr(),
                                                     *rows.shape, *rows.strides]


def test_array_fields_of_interfaces():
    rng = np.random.default_rng()
    rows, hidden = (int(n) for n in rng.integers(1, 300, 2))
    ptr, shape = fast_launch.array_fields(_Interface((rows, 2 * hidden), "<f2"), 1, 4)
    assert (ptr, shape) == (0x7F0000001000, (rows * hidden,))
    strided = _Interface((rows, 8), "<f2", strides=(32, 2))
    with pytest.raises(ValueError, match="argument 0 must be C-contiguous"):
        fast_launch.array_fields(strided, 2, 2, "argument 0")
    with pytest.raises(ValueError, match="last axis holds 6 bytes, not whole 4-byte"):
        fast_launch.array_fields(_Interface((rows, 3), "<f2"), 2, 4)
    with pytest.raises(ValueError, match="x has 2 axes; the kernel takes 3"):
        fast_launch.array_fields(torch.empty(rows, 4), 3, 4, "x")
    with pytest.raises(ValueError, match="must be a device array .* not list"):
        fast_launch.array_fields([1, 2], 1, 4)
    with pytest.raises(ValueError, match="x must be C-contiguous"):
        fast_launch.array_fields(torch.empty(8, 4).t(), 2, 4, "x")


def test_scalar_slots_and_layout_errors():
    slot = fast_launch._ScalarSlot(numba.types.float32)
    slot.set(1e-6, 4)
    assert slot.value.value == pytest.approx(np.float32(1e-6)) and \
        isinstance(slot.value, ctypes.c_float)
    with pytest.raises(ValueError, match="must be C-contiguous \\(layout 'C'\\)"):
        fast_launch._ArraySlot(numba.types.float32[:, :], 4)


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16))
def test_custom_op_exports_as_one_graph(dtype):
    # torch.export traces with fake tensors: it fails on a graph break, and it runs only the
    # fake implementation, which must give the output's shape and type.
    op = torch_rms_norm.register()

    class Block(torch.nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(hidden, dtype=dtype))

        def forward(self, x):
            return op(x + 1, self.weight, 1e-6) * 2

    rows, hidden = np.random.default_rng().integers(1, 64, 2) * (1, 64)
    program = torch.export.export(Block(int(hidden)), (torch.zeros(3, int(rows), int(hidden),
                                                                   dtype=dtype),))
    calls = [n for n in program.graph.nodes if n.op == "call_function"
             and "coopgen.rms_norm" in str(n.target)]
    assert len(calls) == 1
    (out,) = [n for n in program.graph.nodes if n.op == "output"][0].args[0]
    assert tuple(out.meta["val"].shape) == (3, int(rows), int(hidden))
    assert out.meta["val"].dtype == dtype
    with pytest.raises(Exception, match="w must be \\(hidden,\\)"):
        torch.export.export(Block(int(hidden) + 1), (torch.zeros(2, int(hidden), dtype=dtype),))
