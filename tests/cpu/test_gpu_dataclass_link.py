"""``coop.gpu_dataclass`` arguments link under each numba compiler installed, and the argument
handler turns an instance into what each compiler passes."""
import importlib
import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "gpu"))
from gpu_dataclass_kernels import ScaleBias, kernel, traits  # noqa: E402

COMPILERS = [c for c in ("numba", "numba_cuda_mlir") if importlib.util.find_spec(c)]


@pytest.mark.parametrize("compiler", COMPILERS)
def test_dataclass_argument_links(compiler):
    from coopgen.linkcheck import link_as_launched
    cuda = importlib.import_module(compiler).cuda
    values = np.zeros(256)
    res = link_as_launched(kernel(cuda), 128, values, values.copy(),
                           traits(np.random.default_rng(1)))
    assert res.kernel.local_bytes == 0


@pytest.mark.skipif("numba_cuda_mlir" not in COMPILERS, reason="numba-cuda-mlir not installed")
def test_mlir_passes_the_fields_as_one_record():
    from numba_cuda_mlir.numba_cuda import types
    from numba_cuda_mlir.numba_cuda.typing.typeof import typeof

    from coopgen import coop
    t = traits(np.random.default_rng(2))
    ty = typeof(t)
    assert isinstance(ty, types.Record) and [n for n, _ in ty.members] == ["scale", "bias",
                                                                           "shift"]
    _, record = coop.gpu_dataclass_argument_handler.prepare_args(ty, t)
    assert (record["scale"], record["bias"], record["shift"]) == (t.scale, t.bias, t.shift)


@pytest.mark.skipif("numba_cuda_mlir" not in COMPILERS, reason="numba-cuda-mlir not installed")
def test_mlir_refuses_fields_that_are_not_numbers():
    import dataclasses

    from numba_cuda_mlir.numba_cuda.typing.typeof import typeof

    from coopgen import coop

    @dataclasses.dataclass
    class WithObject:
        scale: object

    t = coop.gpu_dataclass(WithObject(ScaleBias), compute_temp_storage=False)
    with pytest.raises(Exception, match="fields must be numbers"):
        typeof(t)
