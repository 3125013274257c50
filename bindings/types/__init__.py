"""coopgen's own description of types (``desc``) and their C++ spelling (``cpp``): what a backend
describes its type objects with (coopgen.lower for numba-cuda); nothing here imports numba."""
