"""coopgen's own description of types and their C++ spelling (``desc``, ``cpp``): what the
resolver and the C++ writer know of a call's arguments. A backend (coopgen.lower for
numba-cuda) describes its type objects with these; nothing here imports numba."""
