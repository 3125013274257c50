"""Mamba's selective-scan forward pass (Gu and Dao, 2023) as one coopgen kernel.

For every batch b, channel d and state n the selective SSM runs the linear recurrence

    dt[t]   = softplus(delta[b, d, t] + delta_bias[d])      (or without softplus)
    h[n, t] = exp(dt[t] * A[d, n]) * h[n, t - 1] + dt[t] * B[b, n, t] * u[b, d, t]
    y[t]    = sum_n C[b, n, t] * h[n, t] + D[d] * u[b, d, t]
    y[t]   *= silu(z[b, d, t])                               (when z is given)

and returns y (B, D, L) and the last state h[:, L - 1] (B, D, N). A recurrence
h = a * h_prev + b is a scan over (a, b) records with the associative operator

    (a1, b1) o (a2, b2) = (a1 * a2, a2 * b1 + b2),

so each thread block takes one (b, d) and walks L in chunks of ``THREADS * ITEMS``: it loads
the chunk of u, delta (and z), then for each state n loads the chunk of B and C, builds the
records and runs ``block.inclusive_scan`` over them. A prefix callback carries h between chunks
(its state, the pair (a, h) of each state n, lives in shared memory between the chunks'
scans).

    python examples/mamba_selective_scan.py     # checks against a float64 numpy reference
"""
from __future__ import annotations

import math

import numpy as np
from _compiler import cuda  # numba-cuda's, or numba-cuda-mlir's (COOPGEN_COMPILER)
from _compiler import libdevice

from coopgen import block, local, shared

THREADS, ITEMS = 128, 16  # the official kernel's shape for L > 1024: chunks of 2048
CHUNK = THREADS * ITEMS
MAX_STATES = 64  # N (d_state) per kernel: the running states live in shared memory
LOG2E = 1.4426950408889634

#: One scan element: h = a * h_prev + b.
SSM = np.dtype([("a", np.float32), ("b", np.float32)], align=True)


@cuda.jit(device=True, inline="always")
def ssm_combine(x, y, out):
    """(a1, b1) o (a2, b2) = (a1 a2, a2 b1 + b2): apply x, then y."""
    out.a = x.a * y.a
    out.b = y.a * x.b + y.b


@cuda.jit(device=True, inline="always")
def carry_state(state, chunk_aggregate, out):
    """Prefix callback: return the state (a, h) before this chunk, then advance it over the
    chunk. ``state`` points at two floats; CUB calls this from the block's first warp, each
    lane with its own copy of them."""
    out.a = state[0]
    out.b = state[1]
    state[1] = chunk_aggregate.a * state[1] + chunk_aggregate.b
    state[0] = state[0] * chunk_aggregate.a


@cuda.jit(device=True, inline="always")
def softplus(x):
    return x if x > 20.0 else math.log1p(math.exp(x))


def make_kernel(has_z: bool, delta_softplus: bool):
    """The kernel, specialised on whether z gates the output and delta goes through softplus."""

    @cuda.jit
    def selective_scan_fwd(u, delta, A, B, C, D, z, delta_bias, out, last_state):
        # Unsigned indices, as CUDA C++'s blockIdx and loop counters over sizes are: numba's
        # are signed, and every signed index costs a negative-index fix-up in 64-bit arithmetic.
        d, b = np.uint32(cuda.blockIdx.x), np.uint32(cuda.blockIdx.y)
        t = cuda.threadIdx.x
        length, n_states = u.shape[2], A.shape[1]
        u_vals = local.array(ITEMS, np.float32)
        dt_vals = local.array(ITEMS, np.float32)
        z_vals = local.array(ITEMS, np.float32)
        b_vals = local.array(ITEMS, np.float32)
        c_vals = local.array(ITEMS, np.float32)
        y_vals = local.array(ITEMS, np.float32)
        records = local.array(ITEMS, SSM)
        prefix = local.array(2, np.float32)  # the callback's state: (a, h) before the chunk
        running = shared.array((MAX_STATES, 2), np.float32)  # (a, h) of each state after a chunk
        bias = delta_bias[d]
        skip = D[d]
        for start in range(0, length, CHUNK):
            valid = min(CHUNK, length - start)
            block.load(u[b, d, start:], u_vals, ITEMS, "warp_transpose", valid, np.float32(0))
            block.load(delta[b, d, start:], dt_vals, ITEMS, "warp_transpose", valid,
                       np.float32(0))
            for i in range(ITEMS):
                dt = dt_vals[i] + bias
                dt_vals[i] = softplus(dt) if delta_softplus else dt
                y_vals[i] = skip * u_vals[i]
            # this thread's valid items in the chunk (all when >= ITEMS), in 32 bits as C++
            # computes it: numba's 64-bit `t * ITEMS + i < valid` in the state loop cost three
            # more instructions per item and state (8% more executed, by ncu)
            in_range = np.int32(valid - t * ITEMS)
            for state in range(n_states):
                n = np.uint32(state)
                a_n = A[d, n] * np.float32(LOG2E)  # exp(x) = exp2(x log2 e), as CUDA's expf
                block.load(B[b, n, start:], b_vals, ITEMS, "warp_transpose", valid,
                           np.float32(0))
                block.load(C[b, n, start:], c_vals, ITEMS, "warp_transpose", valid,
                           np.float32(0))
                for i in range(ITEMS):
                    if np.int32(i) < in_range:
                        records[i].a = libdevice.exp2f(dt_vals[i] * a_n)  # math.exp2: 3.11+
                        records[i].b = dt_vals[i] * u_vals[i] * b_vals[i]
                    else:  # past the end: the identity, so the state passes unchanged
                        records[i].a = np.float32(1)
                        records[i].b = np.float32(0)
                if start == 0:
                    prefix[0] = np.float32(1)
                    prefix[1] = np.float32(0)
                else:
                    prefix[0] = running[n, 0]
                    prefix[1] = running[n, 1]
                block.inclusive_scan(records, records, scan_op=ssm_combine,
                                     prefix_op=(carry_state, prefix), algorithm="warp_scans")
                for i in range(ITEMS):
                    y_vals[i] += records[i].b * c_vals[i]
                if t == 0:
                    running[n, 0] = prefix[0]
                    running[n, 1] = prefix[1]
            if has_z:
                block.load(z[b, d, start:], z_vals, ITEMS, "warp_transpose", valid,
                           np.float32(0))
                for i in range(ITEMS):
                    zi = z_vals[i]
                    y_vals[i] *= zi / (np.float32(1) + math.exp(-zi))
            block.store(out[b, d, start:], y_vals, ITEMS, "warp_transpose", valid)
            cuda.syncthreads()  # thread 0's running states, before the next chunk reads them
        if t < n_states:
            last_state[b, d, t] = running[t, 1]

    return selective_scan_fwd


_kernels = {}


def selective_scan_fwd(u, delta, A, B, C, D, z=None, delta_bias=None, delta_softplus=False,
                       out=None, last_state=None, stream=0):
    """y, last_state = selective_scan_fwd(...) on device arrays of float32:
    u, delta, z (batch, dim, L); A (dim, N); B, C (batch, N, L); D, delta_bias (dim,).
    ``out`` (batch, dim, L) and ``last_state`` (batch, dim, N) may be given, to reuse them:
    allocating device memory on every call costs more host time than the kernel takes."""
    batch, dim, length = u.shape
    n_states = A.shape[1]
    shapes = {"delta": (delta.shape, u.shape), "A": (A.shape, (dim, n_states)),
              "B": (B.shape, (batch, n_states, length)), "C": (C.shape, (batch, n_states, length)),
              "D": (D.shape, (dim,))}
    optional = {"z": (z, u.shape), "delta_bias": (delta_bias, (dim,)), "out": (out, u.shape),
                "last_state": (last_state, (batch, dim, n_states))}
    shapes.update({name: (a.shape, want) for name, (a, want) in optional.items() if a is not None})
    for name, (got, want) in shapes.items():
        if tuple(got) != tuple(want):
            raise ValueError(f"selective_scan_fwd: {name} has shape {tuple(got)}; with u of "
                             f"shape {tuple(u.shape)} and A of {tuple(A.shape)} it must be "
                             f"{tuple(want)}")
    for name, a in (("out", out), ("last_state", last_state)):
        if a is not None and not cuda.is_cuda_array(a):
            raise ValueError(f"selective_scan_fwd: {name} must be a device array, not "
                             f"{type(a).__name__} (numba would copy it to and from the device "
                             f"on every call)")
    if n_states > MAX_STATES:
        raise ValueError(f"selective_scan_fwd: A has {n_states} states; at most {MAX_STATES}")
    key = (z is not None, bool(delta_softplus))
    if key not in _kernels:
        _kernels[key] = make_kernel(*key)
    if delta_bias is None:
        delta_bias = cuda.to_device(np.zeros(dim, np.float32), stream=stream)
    if out is None:
        out = cuda.device_array(u.shape, np.float32, stream=stream)
    if last_state is None:
        last_state = cuda.device_array((batch, dim, n_states), np.float32, stream=stream)
    _kernels[key][(dim, batch), THREADS, stream](u, delta, A, B, C, D, u if z is None else z,
                                                 delta_bias, out, last_state)
    return out, last_state


def reference(u, delta, A, B, C, D, z=None, delta_bias=None, delta_softplus=False):
    """The recurrence in float64 numpy, one time step at a time."""
    u, delta, A, B, C, D = (np.asarray(x, np.float64) for x in (u, delta, A, B, C, D))
    dt = delta + (0.0 if delta_bias is None else np.asarray(delta_bias, np.float64)[:, None])
    if delta_softplus:
        dt = np.where(dt > 20.0, dt, np.log1p(np.exp(np.minimum(dt, 20.0))))
    batch, dim, length = u.shape
    h = np.zeros((batch, dim, A.shape[1]))
    y = np.empty((batch, dim, length))
    for step in range(length):
        decay = np.exp(dt[:, :, step, None] * A[None])  # (batch, dim, N)
        drive = (dt[:, :, step] * u[:, :, step])[:, :, None] * B[:, None, :, step]
        h = decay * h + drive
        y[:, :, step] = np.einsum("bdn,bn->bd", h, C[:, :, step])
    y += D[None, :, None] * u
    if z is not None:
        z = np.asarray(z, np.float64)
        y *= z / (1.0 + np.exp(-z))
    return y, h


def random_inputs(rng, batch, dim, n_states, length, with_z=True, delta_softplus=True):
    """Inputs shaped and scaled like a Mamba layer's: A negative (decaying states) and step
    sizes dt > 0, through softplus (a negative bias, as trained models have) or directly."""
    f32 = np.float32
    if delta_softplus:
        delta = 0.5 * rng.standard_normal((batch, dim, length))
        delta_bias = rng.uniform(-4.0, -1.0, dim)
    else:
        delta = rng.uniform(0.0, 0.3, (batch, dim, length))
        delta_bias = rng.uniform(0.0, 0.05, dim)
    return dict(
        u=rng.standard_normal((batch, dim, length)).astype(f32),
        delta=delta.astype(f32),
        A=-np.exp(rng.uniform(-1.0, 1.5, (dim, n_states))).astype(f32),
        B=rng.standard_normal((batch, n_states, length)).astype(f32),
        C=rng.standard_normal((batch, n_states, length)).astype(f32),
        D=rng.standard_normal(dim).astype(f32),
        z=rng.standard_normal((batch, dim, length)).astype(f32) if with_z else None,
        delta_bias=delta_bias.astype(f32),
    )


def check(batch, dim, n_states, length, with_z=True, delta_softplus=True, reuse_outputs=False,
          rng=None):
    """Run the kernel on random inputs and compare with the float64 reference (rtol 1e-3)."""
    rng = rng or np.random.default_rng()
    host = random_inputs(rng, batch, dim, n_states, length, with_z, delta_softplus)
    dev = {k: (cuda.to_device(v) if v is not None else None) for k, v in host.items()}
    outputs = {}
    if reuse_outputs:  # given, and poisoned: every element must be written
        outputs = {"out": cuda.to_device(np.full((batch, dim, length), np.nan, np.float32)),
                   "last_state": cuda.to_device(np.full((batch, dim, n_states), np.nan,
                                                        np.float32))}
    y, last = selective_scan_fwd(**dev, delta_softplus=delta_softplus, **outputs)
    want_y, want_last = reference(**host, delta_softplus=delta_softplus)
    got_y, got_last = y.copy_to_host(), last.copy_to_host()
    for name, got, want in (("y", got_y, want_y), ("last_state", got_last, want_last)):
        # rtol 1e-3, with an absolute floor at 1e-3 of the output's scale for values near 0
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-3 * np.abs(want).max(),
                                   err_msg=f"selective_scan_fwd {name}")
    return got_y, got_last


if __name__ == "__main__":
    check(2, 8, 16, 3 * CHUNK + 100, with_z=True, delta_softplus=True)
    check(1, 4, 4, 700, with_z=False, delta_softplus=False, reuse_outputs=True)
    print(f"mamba_selective_scan: y and the last state match the float64 reference "
          f"(rtol 1e-3; L up to {3 * CHUNK + 100}, chunks of {CHUNK})")
