"""The numba-cuda-mlir backend: numba-cuda-mlir's typing, MLIR lowering and linking of coopgen's
calls, a sibling of coopgen.lower over the same plans and shims."""
