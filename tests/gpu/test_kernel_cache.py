"""A cache=True kernel that calls primitives is loaded by a second process without compiling."""
import json
import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.gpu

SCRIPT = textwrap.dedent('''
    import json, time
    import numpy as np
    from numba import cuda
    from coopgen import block, local
    from coopgen.codegen import nvrtc

    DTYPE, THREADS, ITEMS = np.{dtype}, {threads}, {items}

    @cuda.jit(cache=True)
    def k(d_in, d_out):
        items = local.array(ITEMS, DTYPE)
        base = cuda.blockIdx.x * cuda.blockDim.x * ITEMS
        block.load(d_in[base:], items, algorithm="warp_transpose")
        block.radix_sort_keys(items)
        block.store(d_out[base:], items, algorithm="warp_transpose")

    x = np.random.default_rng().integers(-99, 99, 2 * THREADS * ITEMS, dtype=DTYPE)
    out = cuda.device_array_like(x)
    t = time.perf_counter()
    k[2, THREADS](cuda.to_device(x), out)
    cuda.synchronize()
    dt = time.perf_counter() - t
    ok = bool((out.copy_to_host().reshape(2, -1) == np.sort(x.reshape(2, -1), axis=1)).all())
    print(json.dumps({{"ok": ok, "first_launch_s": dt, "nvrtc": nvrtc.compile_count(),
                      "hits": sum(k.stats.cache_hits.values())}}))
''')


# The second kernel keeps its 132 KB of storage in dynamic shared memory: the cached kernel
# must still launch with it.
@pytest.mark.parametrize("dtype,threads,items", [("int32", 128, 4), ("int64", 1024, 16)])
def test_second_process_loads_the_kernel(tmp_path, dtype, threads, items):
    (tmp_path / "cached_kernel.py").write_text(SCRIPT.format(dtype=dtype, threads=threads,
                                                             items=items), encoding="utf-8")
    env = dict(os.environ, COOPGEN_CACHE_DIR=str(tmp_path / "shims"))
    runs = []
    for _ in range(2):
        out = subprocess.run([sys.executable, "cached_kernel.py"], cwd=tmp_path, env=env,
                             capture_output=True, encoding="utf-8", errors="replace")
        assert out.returncode == 0, out.stderr[-3000:]
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    assert runs[0]["ok"] and runs[1]["ok"]
    assert runs[0]["nvrtc"] == 1
    assert runs[1]["nvrtc"] == 0
    assert runs[1]["hits"] >= 1, runs[1]
