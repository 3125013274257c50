"""The numba-cuda backend (docs/architecture.md maps its modules). A second backend
(numba-cuda-mlir) would be a sibling of this package."""
