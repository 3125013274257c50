"""coopgen: generated numba.cuda bindings for CUB block/warp primitives."""
