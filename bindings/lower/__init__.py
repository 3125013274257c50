"""The numba-cuda backend: numba types -> descriptions, typing and lowering of primitive calls,
coopgen's arrays, storage and objects in kernels, the IR rewrite, the launch hook, and the one
door to numba-cuda's private parts (``numba_internals``). A second backend (numba-cuda-mlir)
would be a sibling of this package."""
