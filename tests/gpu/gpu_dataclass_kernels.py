"""A ``coop.gpu_dataclass`` of numbers as a kernel argument (cuda.coop's traits struct), for
either numba compiler: ``kernel(cuda)`` builds the kernel with cuda.coop's argument handler,
``traits(rng)`` draws an instance (linked on the CPU by tests/cpu/test_gpu_dataclass_link.py,
run by tests/gpu/test_gpu_dataclass.py)."""
import dataclasses

import numpy as np

from coopgen import coop


@dataclasses.dataclass
class ScaleBias:
    scale: np.int32
    bias: np.int32
    shift: np.float64


def kernel(cuda):
    @cuda.jit(extensions=[coop.gpu_dataclass_argument_handler])
    def scale_bias(values, out, traits):
        i = cuda.grid(1)
        if i < values.size:
            out[i] = values[i] * traits.scale + traits.bias + traits.shift
    return scale_bias


def traits(rng):
    scale, bias = (np.int32(v) for v in rng.integers(-9, 9, 2))
    return coop.gpu_dataclass(ScaleBias(scale, bias, np.float64(rng.random())),
                              compute_temp_storage=False)


def want(values, t):
    return values * t.scale + t.bias + t.shift
