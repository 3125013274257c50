"""coopgen kernels in PyTorch (examples/fast_launch.py, examples/torch_rms_norm.py): the
Launcher's raw launches on tensors, CuPy and numba arrays, a captured and replayed CUDA graph,
and the custom op under torch.compile(fullgraph=True), each against a float64 reference."""
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import rms_norm  # noqa: E402
import torch_rms_norm as trn  # noqa: E402

pytestmark = pytest.mark.gpu
DTYPES = (torch.float16, torch.bfloat16)


def _inputs(shape, dtype, seed, scale=3.0):
    gen = torch.Generator(device="cuda").manual_seed(seed)
    x = (scale * torch.randn(shape, device="cuda", generator=gen)).to(dtype)
    w = (torch.rand(shape[-1], device="cuda", generator=gen) + 0.5).to(dtype)
    return x, w


def _assert_close(got, x, w, eps):
    worst = trn.worst_error(got, trn.reference(x, w, eps), x.shape[-1])
    assert worst <= 1.0, f"error {worst:.3g}x the tolerance"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,convert_once", [((1, 4096), False), ((5, 1000), False),
                                                ((2, 9, 3072), False), ((300, 8192), False),
                                                ((7, 32), False), ((40, 4096), True),
                                                ((3, 1000), True)])
@pytest.mark.parametrize("layout", ("sliced", "striped", "blocked"))
def test_launcher_on_tensors(shape, convert_once, layout, dtype):
    # The first call is numba's launch, the next ones the Launcher's, on fresh inputs each.
    seed = int(np.random.default_rng().integers(1 << 30))
    for i in range(3):
        x, w = _inputs(shape, dtype, seed + i)
        out = torch.full_like(x, float("nan"))
        assert trn.rms_norm(x, w, 1e-5, out=out, convert_once=convert_once,
                            striped=layout == "striped", blocked=layout == "blocked") is out
        _assert_close(out, x, w, 1e-5)
        _assert_close(trn.rms_norm(x, w, 1e-5), x, w, 1e-5)


def test_launcher_on_a_side_stream_and_other_arrays():
    # PyTorch's current stream is the launch's: work queued behind a long copy on a side
    # stream must see that copy. Then CuPy and numba arrays through the same Launcher.
    x, w = _inputs((4096, 4096), torch.bfloat16, 11)
    trn.rms_norm(x, w)  # the signature's first call
    side, big = torch.cuda.Stream(), torch.randn(1 << 26, device="cuda")
    with torch.cuda.stream(side):
        for _ in range(20):
            big.mul_(1.0)
        x2 = x.clone()  # queued behind the multiplies on the side stream
        y = trn.rms_norm(x2, w)
    side.synchronize()
    _assert_close(y, x, w, 1e-6)
    launcher = trn._launchers[(torch.bfloat16, torch.bfloat16, 4096, None, False, False, False)]
    cupy = pytest.importorskip("cupy")
    y16 = torch.empty_like(x)
    launcher(4096, cupy.asarray(x.view(torch.int16)), cupy.asarray(w.view(torch.int16)),
             rms_norm.cuda.as_cuda_array(y16.view(torch.int16)), 4096, 1e-6, stream=0)
    torch.cuda.synchronize()
    _assert_close(y16, x, w, 1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cuda_graph_capture_and_replay(dtype):
    # Two chained coopgen launches and a PyTorch op captured in one graph; replayed on new
    # values written into the captured input, twice.
    x, w = _inputs((64, 5120), dtype, 23)
    w2 = (w.float() * 0.5).to(dtype)
    trn.rms_norm(trn.rms_norm(x, w), w2)  # warm up: compile and keep the Launcher
    torch.cuda.synchronize()
    graph, stream = torch.cuda.CUDAGraph(), torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream), torch.cuda.graph(graph, stream=stream):
        h = trn.rms_norm(x, w)
        y = trn.rms_norm(h * 2, w2)
    torch.cuda.current_stream().wait_stream(stream)
    for seed in (5, 6):
        x.copy_(_inputs(x.shape, dtype, seed)[0])
        graph.replay()
        torch.cuda.synchronize()
        _assert_close(h, x, w, 1e-6)
        _assert_close(y, (h * 2), w2, 1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_custom_op_under_torch_compile_fullgraph(dtype):
    op = trn.register()
    torch._dynamo.reset()

    def layer(x, w, bias):
        return op(x + bias, w, 1e-6) * 2

    model = torch.compile(layer, fullgraph=True)  # raises on a graph break
    for rows in (33, 1024):
        x, w = _inputs((2, rows, 2048), dtype, rows)
        bias = torch.full((2048,), 0.25, device="cuda", dtype=dtype)
        got = model(x, w, bias)
        torch.cuda.synchronize()
        _assert_close(got / 2, x + bias, w, 1e-6)  # halving is exact
    from torch._dynamo.utils import counters
    assert counters["stats"]["unique_graphs"] >= 1 and not counters["graph_break"]
