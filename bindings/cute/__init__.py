"""The CuTe DSL backend: coopgen's primitives called inside ``@cute.kernel`` functions while CuTe
DSL traces them, a sibling of coopgen.lower and coopgen.mlir over the same plans and shims. It
imports cutlass only once a kernel calls a primitive (``import coopgen`` never does)."""
