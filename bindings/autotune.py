"""Autotuning of a kernel's compile-time parameters, as Triton's autotuner does: a function
that launches a kernel takes a ``config`` (block size, items per thread, algorithm, variant...),
and the first call of each key (the shapes that matter, bucketed) times every candidate on the
GPU and keeps the fastest. The choice is kept in memory and on disk, in a file per tuner and GPU,
so later processes skip the timing.

    @coopgen.autotune.autotune(
        configs=[Config(threads=t, items=i) for t in (128, 256, 512) for i in (8, 16)],
        key=lambda x, out: (str(x.dtype), x.shape[-1], pow2(x.shape[0])))
    def scale(x, out, *, config):
        kernel_for(config.items)[blocks(x, config), config.threads](x, out)

The function must be safe to call again with the same arguments (it writes its outputs; it does
not update its inputs in place): each candidate runs on the caller's arguments. Candidates that
fail to compile or launch are skipped (the reason is kept in ``tuner.failures``). ``prune``
(``prune(configs, *args, **kwargs)`` -> the configs worth timing for these arguments, as
Triton's ``prune_configs_by``) narrows the candidates of a key before any is run: a candidate
meant only for a few rows is not timed on a prefill; a config given explicitly still runs.
``copies`` (``copies(*args, **kwargs)`` -> a list of (args, kwargs)) gives the timing other
arguments of the same shapes to cycle through, so that a call does not find its input in the
L2 cache the previous call left it in (a kernel timed on one input over and over is timed on
L2, while a caller's or a benchmark's input may come from memory); each candidate still runs
first on the caller's own arguments.

Cache: ``$COOPGEN_AUTOTUNE_CACHE`` or ``~/.cache/coopgen/autotune``; one JSON file per tuner
name, tuner version and GPU (name and compute capability)."""
from __future__ import annotations

import ctypes
import functools
import itertools
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

CACHE_ENV = "COOPGEN_AUTOTUNE_CACHE"


class Config:
    """One candidate: named compile-time parameters (``config.threads``)."""

    def __init__(self, **params):
        if not params:
            raise ValueError("coopgen.autotune: a Config names at least one parameter")
        self.params = dict(sorted(params.items()))
        self._hash = hash(tuple(self.params.items()))

    def __getattr__(self, name):
        try:
            return self.__dict__["params"][name]
        except KeyError:
            raise AttributeError(f"coopgen.autotune: the config {self} has no parameter "
                                 f"{name!r}") from None

    def __eq__(self, other):
        return isinstance(other, Config) and self.params == other.params

    def __hash__(self):
        return self.__dict__["_hash"]

    def __repr__(self):
        return "Config(" + ", ".join(f"{k}={v!r}" for k, v in self.params.items()) + ")"


def pow2(n: int) -> int:
    """The bucket of ``n``: the next power of two (1, 2, 4, ...)."""
    return 1 << max(int(n) - 1, 0).bit_length()


def cache_dir() -> Path:
    return Path(os.environ.get(CACHE_ENV) or Path.home() / ".cache" / "coopgen" / "autotune")


class Autotuner:
    """``fn(*args, config=...)`` with the fastest config per key; see the module docstring.

    ``timer(call) -> seconds``: times one candidate (``call()`` launches it once); the default
    times launches on the GPU with events. ``device``: a name for the cache file (default: the
    current GPU's name and compute capability). ``prune``, ``copies``: see the module
    docstring."""

    def __init__(self, fn, configs, key, *, name: str | None = None, version: str = "1",
                 timer=None, device: str | None = None, prune=None, copies=None):
        self.fn, self.configs, self.key = fn, list(configs), key
        self.prune, self.copies = prune, copies
        if not self.configs or not all(isinstance(c, Config) for c in self.configs):
            raise ValueError("coopgen.autotune: configs must be a non-empty list of Config")
        self.name = name or f"{fn.__module__}.{fn.__qualname__}"
        self.version, self.timer, self._device = version, timer or gpu_timer, device
        self.best: dict = {}  # key -> Config
        self.timings: dict = {}  # key -> {Config: seconds}
        self.failures: dict = {}  # key -> {Config: error text}
        self._disk: dict | None = None  # key's text -> Config, read from the cache once
        functools.update_wrapper(self, fn)

    def __call__(self, *args, **kwargs):
        return self.fn(*args, config=self.config_for(*args, **kwargs), **kwargs)

    def config_for(self, *args, **kwargs) -> Config:
        key = self.key(*args, **kwargs)
        config = self.best.get(key)
        if config is None:
            if self._disk is None:
                self._disk = self._load()
            config = self._disk.get(_key_text(key))
            if config is None:
                config = self.tune(key, args, kwargs)
            self.best[key] = config
        return config

    def tune(self, key, args, kwargs) -> Config:
        """Time every candidate on these arguments; keep and save the fastest."""
        _refuse_in_capture(self.name)
        times, failures = {}, {}
        configs = self.configs if self.prune is None else [
            c for c in self.prune(self.configs, *args, **kwargs) if c in self.configs]
        inputs = self.copies and list(self.copies(*args, **kwargs)) or [(args, kwargs)]
        turn = itertools.count()  # one cycle through the copies for every candidate
        for config in configs:
            call = functools.partial(self.fn, *args, config=config, **kwargs)
            try:
                call()  # compiles and loads: not timed
                times[config] = self.timer(_cycling(self.fn, config, inputs, turn))
            except Exception as e:  # noqa: BLE001 (a candidate that cannot run is skipped)
                failures[config] = f"{type(e).__name__}: {e}"
        del inputs  # the copies' memory goes back before the result is saved
        self.timings[key], self.failures[key] = times, failures
        if not times:
            raise RuntimeError(f"coopgen.autotune: no config of {self.name} ran for key {key}: "
                               + ("; ".join(f"{c}: {e}" for c, e in failures.items())
                                  or "prune left none"))
        self.best[key] = best = min(times, key=times.get)
        self._save(_key_text(key), best)
        return best

    # --- the cache on disk -------------------------------------------------------------------

    def path(self) -> Path:
        device = self._device or device_name()
        safe = "".join(ch if ch.isalnum() or ch in "-_." else "_"
                       for ch in f"{self.name}-v{self.version}-{device}")
        return cache_dir() / f"{safe}.json"

    def _load(self) -> dict:
        try:
            entries = json.loads(self.path().read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        known = {tuple(c.params.items()): c for c in self.configs}
        # a config no longer offered is tuned again
        return {key: known[tuple(sorted(params.items()))] for key, params in entries.items()
                if tuple(sorted(params.items())) in known}

    def _save(self, key: str, config: Config) -> None:
        path = self.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            entries = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            entries = {}
        entries[key] = config.params
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(entries, f, indent=1, sort_keys=True)
        os.replace(tmp, path)  # other processes see the old file or the new one


def _cycling(fn, config, inputs, turn):
    """A call of ``fn`` under ``config`` on each of ``inputs`` in turn, one per call, going on
    where the previous candidate's calls stopped (``turn``, a shared counter): a copy is read
    again only after every other copy, so that a candidate does not find in L2 the copies its
    predecessor just read (starting each candidate at the first copy timed the later ones on
    L2: 20% faster than the benchmark's calls at 64 x 1,024 float16)."""
    calls = [functools.partial(fn, *a, config=config, **k) for a, k in inputs]
    return lambda: calls[next(turn) % len(calls)]()


def autotune(configs, key, **options):
    """Decorator form of :class:`Autotuner`."""
    return lambda fn: Autotuner(fn, configs, key, **options)


def _key_text(key) -> str:
    """A key as the cache file names it (its values' text)."""
    return json.dumps([str(k) for k in (key if isinstance(key, tuple) else (key,))])


def _refuse_in_capture(name: str) -> None:
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available() and \
            torch.cuda.is_current_stream_capturing():
        raise RuntimeError(f"coopgen.autotune: {name} meets a new key inside a CUDA graph "
                           f"capture, where nothing can be timed; call it once before")


# --- the GPU -------------------------------------------------------------------------------

def _cuda():
    from .torch.launch import check, driver
    return driver(), check


def device_name() -> str:
    """The current GPU's name and compute capability (``NVIDIA_H100_80GB_HBM3-sm90``)."""
    lib, check = _cuda()
    device, name = ctypes.c_int(), ctypes.create_string_buffer(256)
    check(lib.cuCtxGetDevice(ctypes.byref(device)), "cuCtxGetDevice")
    check(lib.cuDeviceGetName(name, 256, device), "cuDeviceGetName")
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.cuDeviceGetAttribute(ctypes.byref(major), 75, device)  # compute capability major
    lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, device)
    return f"{name.value.decode().replace(' ', '_')}-sm{major.value}{minor.value}"


def gpu_timer(call, batches: int = 15, per_batch: int = 10, batch_seconds: float = 2e-3) -> float:
    """Seconds per call on the GPU: the median of ``batches`` batches of ``per_batch`` calls
    (fewer where they take over ``batch_seconds``), events around each on the current stream:
    tools/bench/rmsnorm.py's batches, so that the candidate kept is the one a benchmark finds
    fastest (batches of about 70 ranked the few-µs kernels otherwise). Where PyTorch is
    imported, the GPU first sleeps (``torch.cuda._sleep``) while the host enqueues the batch,
    so a launch-bound call is timed on the GPU; a batch the host did not enqueue within the
    sleep is timed again after a longer one."""
    import time

    from .torch.launch import current_stream
    lib, check = _cuda()
    stream = ctypes.c_void_p(current_stream(-1))
    sleep = getattr(getattr(sys.modules.get("torch"), "cuda", None), "_sleep", None)
    events, ms = [ctypes.c_void_p() for _ in range(3)], ctypes.c_float()
    for event in events:
        check(lib.cuEventCreate(ctypes.byref(event), 0), "cuEventCreate")

    def elapsed(a, b) -> float:
        lib.cuEventElapsedTime(ctypes.byref(ms), a, b)
        return ms.value * 1e-3

    def batch(n: int, sleep_s: float) -> tuple[float, float, float]:
        """(GPU seconds a call, the host's seconds of the batch, the GPU's of the sleep)"""
        lib.cuEventRecord(events[0], stream)
        if sleep is not None and sleep_s:
            sleep(int(2e9 * sleep_s))  # cycles at about 2 GHz
        lib.cuEventRecord(events[1], stream)
        t0 = time.perf_counter()
        for _ in range(n):
            call()
        host = time.perf_counter() - t0
        lib.cuEventRecord(events[2], stream)
        check(lib.cuEventSynchronize(events[2]), "cuEventSynchronize")
        return elapsed(events[1], events[2]) / n, host, elapsed(events[0], events[1])

    try:
        gpu, host, _ = batch(2, 0)  # the host's time for two calls, and at most the GPU's
        n = max(1, min(per_batch, int(batch_seconds / max(gpu, 1e-7))))
        sleep_s, times, retries = 2 * host * n + 2e-4, [], 0  # four times the host's batch
        while len(times) < batches:
            gpu, host, slept = batch(n, sleep_s)
            if sleep is not None and host > 0.9 * slept and retries < 20:
                sleep_s, retries = 2 * sleep_s, retries + 1  # the GPU may have waited
            else:
                times.append(gpu)
        return statistics.median(times)
    finally:
        for event in events:
            lib.cuEventDestroy_v2(event)
