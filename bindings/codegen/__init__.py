"""The codegen stage: C++ shims, NVRTC, the toolchain and the on-disk cache. Imports nothing of numba."""
