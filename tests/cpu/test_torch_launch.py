"""coopgen.torch and coopgen.autotune without a GPU: what a launcher keys its specializations on
(dtype, rank, contiguity, device, scalar types), the parameters it packs for each compiler's ABI
(numba-cuda's array fields, numba-cuda-mlir's memrefs) against numpy's view of the same memory,
its errors, the custom op's fake implementation traced by torch.export, and the autotuner's
choice and its cache reused by a second process. The first launch of a signature is recorded
here with its argument types as numba types them (tests/gpu/test_torch.py launches for real).
Skipped where PyTorch is absent."""
import ctypes
import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import numpy as np
import pytest

torch = pytest.importorskip("torch")
import coopgen.torch as ct  # noqa: E402
from coopgen import autotune  # noqa: E402
from coopgen.torch import arrays, launch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples"))


class _Interface:
    """A device array as numba or CuPy describe one: its ``__cuda_array_interface__``."""

    def __init__(self, shape, typestr, strides=None, ptr=0x7F0000001000):
        self.__cuda_array_interface__ = {"data": (ptr, False), "shape": shape,
                                         "typestr": typestr, "strides": strides, "version": 3}


class _Recorded:
    """A compiler whose first launch records the arguments and types them as numba does (a
    host array of the same dtype, shape and strides); launches are recorded, not run."""

    def __init__(self, abi):
        self.abi, self.first = abi, []
        self.cuda = self

    def from_cuda_array_interface(self, desc, owner=None, sync=True):
        return desc

    def first_launch(self, kernel, grid, block, stream, sharedmem, args, launch=True):
        self.first.append((grid, block, args))
        self.launched = launch
        types = []
        for a in args:
            if isinstance(a, dict):
                dtype = np.dtype(a["typestr"])
                host = np.empty(a["shape"], dtype)
                if a["strides"] is not None:
                    host = np.lib.stride_tricks.as_strided(host, a["shape"], a["strides"])
                types.append(numba.typeof(host))
            else:
                types.append(numba.typeof(a))
        return 0x1234, sharedmem + 16, tuple(types)


@pytest.fixture
def launches(monkeypatch):
    """The launches made: (grid, block, shared bytes, stream, the packed parameter values)."""
    made = []

    class Driver:
        def launch_kernel_ex(self, config, function, params, _):
            # the untyped cuLaunchKernelEx: its CUlaunchConfig, made once, and the cluster
            # attribute where the launcher has a cluster shape
            assert isinstance(config, ctypes.c_void_p) and isinstance(function, ctypes.c_void_p)
            spec = next(s for s in made_specs if s.params is params)
            raw = ctypes.string_at(config.value, launch.LAUNCH_CONFIG.size +
                                   launch.LAUNCH_ATTRIBUTES.size)
            *dims, shared, stream = launch.LAUNCH_CONFIG.unpack_from(raw)
            attrs, count = launch.LAUNCH_ATTRIBUTES.unpack_from(raw, launch.LAUNCH_CONFIG.size)
            kind, *cluster = launch.LAUNCH_ATTRIBUTE.unpack(
                ctypes.string_at(attrs, launch.LAUNCH_ATTRIBUTE.size))
            assert count in (0, 1) and kind == launch.CLUSTER_DIMENSION
            made.append((tuple(dims[:3]), tuple(dims[3:]), shared, stream,
                         spec.struct.unpack_from(spec.buffer)) + ((tuple(cluster),) * count))
            return 0

    made_specs = []
    original = launch.Specialization.__init__

    def init(self, *a, **k):
        original(self, *a, **k)
        made_specs.append(self)

    monkeypatch.setattr(launch.Specialization, "__init__", init)
    monkeypatch.setattr(launch, "driver", lambda: Driver())
    monkeypatch.setattr(launch, "current_stream", lambda device: 77)
    monkeypatch.setattr(launch, "stream_getter", lambda: lambda device: 77)
    return made


def _launcher(abi="numba", views=None, scalars=None, cluster=None):
    original = launch.compiler_of
    launch.compiler_of = lambda kernel: _Recorded(abi)
    try:
        return ct.launcher(None, views, scalars, cluster)
    finally:
        launch.compiler_of = original


def _numba_fields(host):
    return [0, 0, host.size, host.itemsize, *host.shape, *host.strides]


def test_specialization_per_signature_and_numba_layout(launches, monkeypatch):
    monkeypatch.setattr(ct.Launcher, "_device", staticmethod(lambda args: 0))
    launcher = _launcher()
    x = torch.empty(3, 5)
    for _ in range(2):
        launcher[(2, 1), 64](x, 7, 0.5)
    launcher[2, 64](x.double(), 7, 0.5)  # another dtype: its own specialization
    launcher[2, 64](x.t(), 7, np.float32(0.5))  # not contiguous: layout 'A', its strides
    assert len(launcher.specializations) == 3 and len(launcher.compiler.first) == 3
    # the first launch of each signature is the compiler's; the others are raw launches
    assert [(g, b, s, st) for g, b, s, st, _ in launches] == [((2, 1, 1), (64, 1, 1), 16, 77)]
    values = launches[0][4]
    host = np.empty((3, 5), np.float32)
    assert list(values[:4]) + list(values[5:9]) == _numba_fields(host)
    assert values[4] == x.data_ptr() and values[9:] == (7, 0.5)
    launcher[2, 64](x.t(), 8, np.float32(0.25))
    t_values = launches[-1][4]
    host_t = np.empty((3, 5), np.float32).T
    assert list(t_values[:4]) + list(t_values[5:9]) == _numba_fields(host_t)
    assert t_values[9:] == (8, 0.25)
    # back to the first signature (the last one's guard fails; the key finds it), and a
    # Parameter (another type, the same key)
    launcher[2, 64](torch.nn.Parameter(x), 9, 0.5)
    assert launches[-1][4][4] == x.data_ptr() and launches[-1][4][9:] == (9, 0.5)
    launcher[2, 64](x, 10, 0.5)
    assert launches[-1][4][9:] == (10, 0.5)
    assert len(launcher.specializations) == 3 and len(launcher.compiler.first) == 3


def test_cluster_launches_through_launch_kernel_ex(launches, monkeypatch):
    # a cluster shape: numba's launch only compiles (it has no cluster shape), and every
    # launch, the first included, is cuLaunchKernelEx's with that shape
    monkeypatch.setattr(ct.Launcher, "_device", staticmethod(lambda args: 0))
    launcher = _launcher(cluster=4)
    x = torch.empty(3, 5)
    launcher[8, 64](x, 7, 0.5)
    assert launcher.compiler.launched is False
    launcher[12, 64](x, 8, 0.5)
    assert [(g, b, s, st, c) for g, b, s, st, _, c in launches] == [
        ((8, 1, 1), (64, 1, 1), 16, 77, (4, 1, 1)), ((12, 1, 1), (64, 1, 1), 16, 77, (4, 1, 1))]
    assert launches[0][4][4] == x.data_ptr() and launches[1][4][9:] == (8, 0.5)
    with pytest.raises(ValueError, match=r"grid \(6, 1, 1\) is no multiple of the cluster "
                                         r"shape \(4, 1, 1\)"):
        _launcher(cluster=(4,))[6, 64](x, 7, 0.5)
    with pytest.raises(ValueError, match=r"a cluster shape is 1 to 3 positive ints below "
                                         r"2\*\*32, not \(0, 1\)"):
        _launcher(cluster=(0, 1))
    with pytest.raises(ValueError, match="a cluster shape .* takes a numba-cuda kernel"):
        _launcher("memref", cluster=2)


def test_memref_layout_and_views(launches, monkeypatch):
    monkeypatch.setattr(ct.Launcher, "_device", staticmethod(lambda args: 0))
    launcher = _launcher("memref", views={0: np.uint32, 1: "flat"})
    x, y = torch.empty(4, 6, dtype=torch.float16), torch.empty(2, 3, 4)
    launcher[1, 32](x, y, np.int32(24))
    launcher[1, 32](x, y, np.int32(24))
    values = launches[-1][4]
    # x: 24 halves seen as 12 words; y: flat; memref = (ptr, ptr, offset, shape, strides)
    assert values == (x.data_ptr(), x.data_ptr(), 0, 12, 1, y.data_ptr(), y.data_ptr(), 0,
                      24, 1, 24)
    with pytest.raises(ValueError, match="argument 0 holds 10 bytes, not whole 4-byte"):
        launcher[1, 32](torch.empty(5, dtype=torch.float16), y, np.int32(5))
    with pytest.raises(ValueError, match="seen as a flat array of float32, so it must be C-"):
        launcher[1, 32](x, y.transpose(0, 1), np.int32(24))


@pytest.mark.parametrize("abi", ("numba", "memref"))
def test_a_guarded_launch_checks_what_the_launcher_keys_on(launches, monkeypatch, abi):
    # the last signature's launch, kept by a caller (examples/torch_rms_norm.py): it launches
    # what the launcher would for arguments of that signature, and refuses (False, nothing
    # launched) a tensor of another dtype, layout or type of number, or another block; its
    # sized form reads no viewed tensor's size but those of the arguments it was made for
    monkeypatch.setattr(ct.Launcher, "_device", staticmethod(lambda args: 0))
    launcher = _launcher(abi, views={0: np.uint32, 1: "flat"})
    assert launcher.guarded() is None
    x, y = torch.empty(4, 6, dtype=torch.float16), torch.empty(2, 3, 4)
    launcher[1, 32](x, y, np.int32(24))
    launcher[(3, 2), 32](x, y, np.int32(24))
    want = launches[-1]
    run, sized = launcher.guarded(), launcher.guarded(sized=(x, y, np.int32(24)))
    for go in (run, sized):
        assert go((3, 2, 1), (32, 1, 1), None, 0, (x, y, np.int32(24)))
        assert launches[-1] == want
    assert run((3, 2, 1), (32, 1, 1), None, 0, (torch.empty(8, dtype=torch.float16), y,
                                              np.int32(16)))
    assert launches[-1][4][3 if abi == "memref" else 2] == 4  # 8 halves: 4 words
    refused = [(x.float(), y, np.int32(24)), (x, y.transpose(0, 2), np.int32(24)), (x, y, 24),
               (x, y.half(), np.int32(24)), (x, y)]
    for args in refused:
        for go in (run, sized):
            assert not go((3, 2, 1), (32, 1, 1), None, 0, args)
    assert not sized((3, 2, 1), (64, 1, 1), None, 0, (x, y, np.int32(24)))
    assert not sized((3, 2, 1), (32, 1, 1), None, 16, (x, y, np.int32(24)))
    assert len(launches) == 4
    # after a launch of other sizes and numbers, the sized launch writes its own again
    assert sized((3, 2, 1), (32, 1, 1), None, 0, (x, y, np.int32(24)))
    assert launches[-1] == want
    assert run((3, 2, 1), (32, 1, 1), None, 0, (x, y, np.int32(7)))
    assert launches[-1][4][-1] == 7 and launches[-1][4][:-1] == want[4][:-1]


@pytest.mark.parametrize("abi", ("numba", "memref"))
def test_a_view_as_wider_elements_must_start_on_their_boundary(launches, monkeypatch, abi):
    # float16 rows seen as 16-byte items: a row that starts 2 bytes past a boundary would fault
    # in the kernel's first load, so the launch refuses it, on the first call of the signature
    # and on every raw launch after it (MisalignedView, a ValueError: the caller may launch
    # another kernel instead)
    monkeypatch.setattr(ct.Launcher, "_device", staticmethod(lambda args: 0))
    launcher = _launcher(abi, views={0: np.complex128, 1: "flat"})
    buf = torch.empty(80, dtype=torch.float16)
    y = torch.empty(8)
    assert buf.data_ptr() % 16 == 0
    with pytest.raises(ct.MisalignedView, match=r"argument 0 is seen as 16-byte complex128 "
                                                r"elements, so its data must start on a "
                                                r"16-byte boundary; it starts at 0x[0-9a-f]+ "
                                                r"\(2 bytes past one\)"):
        launcher[1, 32](buf[1:65], y, np.int32(64))
    assert not launches
    launcher[1, 32](buf[8:72], y, np.int32(64))  # 16 bytes in: aligned
    launcher[1, 32](buf[16:80], y, np.int32(64))  # the raw launch
    assert len(launches) == 1 and launches[0][4][4 if abi == "numba" else 0] == \
        buf[16:].data_ptr()
    for offset in (4, 12):
        with pytest.raises(ct.MisalignedView, match=rf"argument 0 is seen as 16-byte "
                                                    rf"elements.*\({2 * offset % 16} bytes"):
            launcher[1, 32](buf[offset:offset + 64], y, np.int32(64))
    assert len(launches) == 1
    # the flat view of y keeps y's own elements: no alignment beyond theirs
    launcher[1, 32](buf[16:80], torch.empty(9)[1:], np.int32(64))
    assert len(launches) == 2
    # a device array that is not a tensor (its __cuda_array_interface__), on the raw launch
    # too: the same MisalignedView, never another error
    for _ in range(2):  # its signature's first launch (the compiler's), then a raw one
        launcher[1, 32](_Interface((64,), "<f2", ptr=0x7F0000001000), y, np.int32(64))
    with pytest.raises(ct.MisalignedView, match=r"argument 0 is seen as 16-byte .*\(2 bytes"):
        launcher[1, 32](_Interface((64,), "<f2", ptr=0x7F0000001002), y, np.int32(64))
    assert len(launches) == 3


def test_numbers_out_of_range_and_unknown_arguments(launches, monkeypatch):
    monkeypatch.setattr(ct.Launcher, "_device", staticmethod(lambda args: 0))
    launcher = _launcher()
    x = torch.empty(8)
    launcher[1, 32](x, 5)
    with pytest.raises(ValueError, match="does not fit its parameter"):
        launcher[1, 32](x, 1 << 70)  # a Python int is typed int64
    declared = _launcher(scalars={1: np.int32, 2: np.float32})
    declared[1, 32](x, 5, 0.5)
    declared[1, 32](x, 6, 0.25)
    assert launches[-1][4][-2:] == (6, 0.25)
    assert [type(t) for t in declared.compiler.first[0][2][1:]] == [np.int32, np.float32]
    (spec,) = declared.specializations.values()
    assert spec.struct.format.endswith("ixxxxfxxxx")
    with pytest.raises(ValueError, match="does not fit its parameter"):
        declared[1, 32](x, 1 << 31, 0.5)
    with pytest.raises(ValueError, match="does not fit its parameter"):
        declared[1, 32](x, 1, 1e300)
    with pytest.raises(TypeError, match="argument 1 must be a tensor, a device array"):
        launcher[1, 32](x, "eps")
    with pytest.raises(TypeError, match=r"launch\[grid, block\]"):
        launcher[1]


def test_devices_are_checked_before_compiling():
    from numba import cuda

    @cuda.jit
    def kernel(x, y):
        pass

    launcher = ct.launcher(kernel)
    with pytest.raises(ValueError, match="argument 0, argument 1 are in host memory"):
        launcher[1, 32](torch.empty(4), torch.empty(4))
    with pytest.raises(TypeError, match="is no kernel of numba-cuda or numba-cuda-mlir"):
        ct.launcher(lambda x: x)
    with pytest.raises(ValueError, match="a grid or block is 1 to 3 positive ints"):
        launcher[0, 32]
    with pytest.raises(ValueError, match=r"below 2\*\*32, not \(4294967296, 1\)"):
        launcher[(1 << 32, 1), 32]


def test_fields_of_interfaces():
    rng = np.random.default_rng()
    rows, hidden = (int(n) for n in rng.integers(1, 300, 2))
    f = arrays.fields(_Interface((rows, hidden), "<f2"), "x")
    assert (f.ptr, f.shape, f.strides, f.dtype) == (0x7F0000001000, (rows, hidden),
                                                    (hidden, 1), "float16")
    assert f.key() == ("array", "float16", 2, True, arrays.UNKNOWN_DEVICE, False)
    strided = arrays.fields(_Interface((rows, 8), "<f2", strides=(32, 2)), "x")
    assert strided.strides == (16, 1) and not strided.key()[3]
    assert arrays.words(f, "uint32", "x").shape == ((rows * hidden) // 2,) \
        if hidden % 2 == 0 else True
    with pytest.raises(ValueError, match="strides \\(3, 2\\) are not whole 2-byte"):
        arrays.fields(_Interface((2, 2), "<f2", strides=(3, 2)), "x")
    with pytest.raises(TypeError, match="names no element type \\(bfloat16 has no typestr"):
        arrays.fields(_Interface((2,), "<V2"), "x")
    with pytest.raises(TypeError, match="must be a tensor, a device array"):
        arrays.fields([1, 2], "argument 0")


def test_import_coopgen_leaves_torch_alone():
    code = "import sys; sys.modules['torch'] = None; import coopgen; " \
           "assert 'coopgen.torch' not in sys.modules and 'coopgen.autotune' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16))
def test_custom_op_exports_as_one_graph(dtype):
    # torch.export traces with fake tensors: it fails on a graph break, and it runs only the
    # fake implementation, which must give the output's shape and type.
    import torch_rms_norm
    op = torch_rms_norm.register()
    assert torch_rms_norm.register() is op  # registered once

    class Block(torch.nn.Module):
        def __init__(self, hidden):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(hidden, dtype=dtype))

        def forward(self, x):
            return op(x + 1, self.weight, 1e-6) * 2

    rows, hidden = np.random.default_rng().integers(1, 64, 2) * (1, 64)
    program = torch.export.export(Block(int(hidden)), (torch.zeros(3, int(rows), int(hidden),
                                                                   dtype=dtype),))
    calls = [n for n in program.graph.nodes if n.op == "call_function"
             and "coopgen.rms_norm" in str(n.target)]
    assert len(calls) == 1
    (out,) = [n for n in program.graph.nodes if n.op == "output"][0].args[0]
    assert tuple(out.meta["val"].shape) == (3, int(rows), int(hidden))
    assert out.meta["val"].dtype == dtype
    with pytest.raises(Exception, match="w must be \\(hidden,\\)"):
        torch.export.export(Block(int(hidden) + 1), (torch.zeros(2, int(hidden), dtype=dtype),))


def test_output_specs():
    def pair(x: torch.Tensor, n: int) -> tuple[torch.Tensor, torch.Tensor]:
        return x.clone(), x.sum(-1)

    op = ct.custom_op("coopgen_test::pair", pair, outputs=(
        ct.like("x"), ct.like(0, dtype=torch.float32, shape=lambda x, n: x.shape[:-1])))
    program = torch.export.export(_Call(op), (torch.zeros(4, 6, dtype=torch.float16),))
    out = [n for n in program.graph.nodes if n.op == "output"][0].args[0]
    assert [(tuple(o.meta["val"].shape), o.meta["val"].dtype) for o in out] == \
        [((4, 6), torch.float16), ((4,), torch.float32)]


class _Call(torch.nn.Module):
    def __init__(self, op):
        super().__init__()
        self.op = op

    def forward(self, x):
        return self.op(x, 3)


# --- coopgen.autotune --------------------------------------------------------------------

_TUNED = """
import json, sys
from coopgen.autotune import Config, autotune, pow2
calls = []
def timer(call):
    if {forbid_timer}:
        raise AssertionError("timed again: the cache was not used")
    call()
    return {{1: 3.0, 2: 1.0, 4: 2.0}}[calls[-1]]
@autotune([Config(vectors=v) for v in (1, 2, 4)], key=lambda n: pow2(n), name="t",
          timer=timer, device="fake-gpu")
def run(n, *, config):
    calls.append(config.vectors)
    if config.vectors == 4 and n > 100:
        raise ValueError("too wide")
    return config.vectors
print(json.dumps([run(3), run(4), run(300), calls]))
"""


def _tuned(tmp_path, forbid_timer: bool):
    env = {**__import__("os").environ, autotune.CACHE_ENV: str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", _TUNED.format(forbid_timer=forbid_timer)],
                         check=True, capture_output=True, encoding="utf-8", errors="replace", cwd=ROOT, env=env)
    return json.loads(out.stdout.splitlines()[-1])


def test_autotune_keeps_the_fastest_and_a_second_process_reuses_it(tmp_path):
    first = _tuned(tmp_path, forbid_timer=False)
    # key 4 (n = 3 and 4): 1, 2, 4 tried (each called twice: compile, then timed), 2 fastest;
    # key 512: 4 fails and is skipped
    assert first[:3] == [2, 2, 2]
    assert first[3] == [1, 1, 2, 2, 4, 4, 2, 2, 1, 1, 2, 2, 4, 2]
    (cache,) = tmp_path.glob("t-v1-fake-gpu.json")
    assert json.loads(cache.read_text(encoding="utf-8")) == {'["4"]': {"vectors": 2}, '["512"]': {"vectors": 2}}
    second = _tuned(tmp_path, forbid_timer=True)
    assert second == [2, 2, 2, [2, 2, 2]]


def test_autotune_errors_and_config():
    c = autotune.Config(threads=128, items=8)
    assert (c.threads, c.items, c) == (128, 8, autotune.Config(items=8, threads=128))
    assert repr(c) == "Config(items=8, threads=128)"
    with pytest.raises(AttributeError, match="has no parameter 'vectors'"):
        c.vectors
    assert [autotune.pow2(n) for n in (0, 1, 2, 3, 4, 5, 1000)] == [1, 1, 2, 4, 4, 8, 1024]

    def never(*, config):
        raise RuntimeError(f"no {config.threads}")

    tuner = autotune.Autotuner(never, [c], key=lambda: 1, timer=lambda call: 1.0,
                               device="fake", name="never")
    with pytest.raises(RuntimeError, match="no config of never ran for key .*no 128"):
        tuner()
    with pytest.raises(ValueError, match="non-empty list of Config"):
        autotune.Autotuner(never, [], key=lambda: 1)


def test_autotune_prune_times_only_the_configs_left_for_the_arguments(tmp_path):
    ran = []

    def run(n, *, config):
        ran.append((n, config.vectors))
        return config.vectors

    configs = [autotune.Config(vectors=v) for v in (1, 2, 4)]
    tuner = autotune.Autotuner(
        run, configs, key=lambda n: autotune.pow2(n), timer=lambda call: call() and 1.0 / call(),
        device="fake", name="pruned", version="test",
        # wide vectors for few rows only; a config the tuner does not offer is ignored
        prune=lambda cs, n: [c for c in cs if n <= 64 or c.vectors < 4] +
        [autotune.Config(vectors=8)])
    tuner.path = lambda: tmp_path / "pruned.json"  # no cache file shared
    assert tuner(4) == 4 and set(tuner.timings[4]) == set(configs)
    assert tuner(300) == 2 and set(tuner.timings[512]) == set(configs[:2])
    assert (300, 4) not in ran and not tuner.failures[512]
    assert tuner.fn(300, config=configs[2]) == 4  # explicitly: runs
    none = autotune.Autotuner(run, configs, key=lambda n: n, timer=lambda call: 1.0,
                              device="fake", prune=lambda cs, n: [])
    none.path = lambda: tmp_path / "none.json"
    with pytest.raises(RuntimeError, match="no config of .* ran for key 1: prune left none"):
        none(1)


def test_autotune_times_on_the_copies_in_turn(tmp_path):
    ran = []

    def run(n, tag="caller", *, config):
        ran.append((tag, config.vectors))

    def timer(call):
        for _ in range(5):
            call()
        return 1.0 / ran[-1][1]

    tuner = autotune.Autotuner(
        run, [autotune.Config(vectors=v) for v in (1, 2)], key=lambda n, **_: n, timer=timer,
        device="fake", copies=lambda n: [((n,), {"tag": t}) for t in "abc"])
    tuner.path = lambda: tmp_path / "copies.json"
    assert tuner.config_for(3).vectors == 2
    # each candidate: once on the caller's arguments (compile, check), then timed on a, b, c,
    # going on where the previous candidate stopped: no copy is read again before the others
    assert ran == [("caller", 1), ("a", 1), ("b", 1), ("c", 1), ("a", 1), ("b", 1),
                   ("caller", 2), ("c", 2), ("a", 2), ("b", 2), ("c", 2), ("a", 2)]
    ran.clear()
    none = autotune.Autotuner(run, [autotune.Config(vectors=1)], key=lambda n: n,
                              timer=timer, device="fake", copies=lambda n: [])
    none.path = lambda: tmp_path / "none.json"
    none.config_for(3)
    assert ran == [("caller", 1)] * 6  # no copies: the caller's arguments


def _entry_params(ptx: str) -> list[str]:
    """The ``.param`` types of the PTX's kernel entry, in order."""
    import re
    entry = re.search(r"\.entry\s+\S+\((.*?)\)", ptx, re.S).group(1)
    return re.findall(r"\.param\s+\.(\w+)", entry)


def _abi_kernel(x, y, n, a):
    if n > 0:
        y[0, 0] = x[0, 1] * a


@pytest.mark.parametrize("compiler", ("numba", "numba_cuda_mlir"))
def test_the_packed_parameters_are_the_compilers_abi(compiler):
    # what the launcher packs for a C-contiguous and an any-layout 2-D array, an int32 and a
    # float64 is what each compiler's kernel entry declares: 8-byte array fields, then the
    # numbers at their own sizes
    pytest.importorskip(compiler)
    if compiler == "numba":
        from numba import cuda, types
        ptx, _ = cuda.compile_ptx(_abi_kernel, (types.float32[:, ::1], types.float32[:, :],
                                                types.int32, types.float64), cc=(9, 0))
    else:
        from numba_cuda_mlir import cuda
        from numba_cuda_mlir.numba_cuda import types

        from coopgen.mlir.linkcheck import link_ptx
        ptx = link_ptx(cuda.jit(_abi_kernel), (types.float32[:, ::1], types.float32[:, :],
                                               types.int32, types.float64))
    launcher = ct.launcher(cuda.jit(_abi_kernel))
    fields = len(arrays.ABI[launcher.compiler.abi](0, (2, 3), (3, 1), 4))
    assert _entry_params(ptx) == ["u64"] * 2 * fields + ["u32", "f64"]


def test_numba_cuda_mlir_first_launches_on_a_dispatcher_of_their_own():
    # numba-cuda-mlir 0.6 launched a wrong kernel for a float32 scalar on a dispatcher that held
    # a float64 one (an H200 read zeros back): a kernel that compiled anything is launched for a
    # new signature through a new dispatcher of the same function and options, kept alive
    pytest.importorskip("numba_cuda_mlir")
    from numba_cuda_mlir import cuda
    from numba_cuda_mlir.numba_cuda import types

    kernel = cuda.jit(fastmath=True, cache=False)(_abi_kernel)
    assert launch.NumbaCudaMlir.fresh(kernel) is kernel  # nothing compiled: the kernel itself
    f32 = types.Array(types.float32, 2, "C")
    f32_any, i64 = types.Array(types.float32, 2, "A"), types.int64
    result = object()
    kernel.overloads[(f32, f32, types.int32, types.float64)] = result
    kept = len(launch.NumbaCudaMlir.kept)
    clone = launch.NumbaCudaMlir.fresh(kernel)
    assert type(clone) is type(kernel) and clone is not kernel and not clone.overloads
    assert clone.py_func is kernel.py_func and clone.targetoptions == kernel.targetoptions
    assert launch.NumbaCudaMlir.kept[kept:] == [clone]
    # the compile result its launch used: its own signature first, else one it reuses (arrays
    # of another layout, their strides passed; integers of another width), as it picks them
    sig = (f32, f32, types.int32, types.float64)
    assert launch.NumbaCudaMlir._result(kernel, sig, (16, 1, 1)) == (sig, result)
    reused = (f32_any, f32, i64, types.float64)
    assert launch.NumbaCudaMlir._result(kernel, reused, (16, 1, 1)) == (sig, result)
    with pytest.raises(RuntimeError, match="kept no compile result"):
        launch.NumbaCudaMlir._result(kernel, (f32, f32, types.int32, types.float32), (16, 1, 1))
