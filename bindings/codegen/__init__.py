"""The codegen stage: a call's plan -> C++ shim text (``shims``), a kernel's shims -> one
translation unit (``bundle``) compiled by NVRTC to LTO-IR (``nvrtc``, with its ``cache`` and the
``toolchain`` it finds), and the sizes NVRTC knows (``layout``, ``placement``). Imports nothing
of numba: the backend wraps the LTO-IR for its linker."""
