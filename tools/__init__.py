"""Scripts that are not part of the coopgen package: benchmarks, the differential suite, the
sanitizer runner. A regular package, so ``python -m tools.fuzz`` finds this folder first."""
