import pytest

from coopgen.generator.headers import find_entry


@pytest.fixture(scope="session")
def fresh_models():
    """Freshly generated models of every lock entry (one parse each per test session, by
    libclang: not the parses ``coopgen generate`` keeps in coopgen's cache)."""
    pytest.importorskip("clang.cindex")
    from coopgen.generator.pipeline import build_model

    cache = {}

    def get(cccl):
        if cccl not in cache:
            with pytest.MonkeyPatch.context() as mp:
                mp.setenv("COOPGEN_DISABLE_CACHE", "1")
                cache[cccl] = build_model(find_entry(cccl))
        return cache[cccl]
    return get
