import pytest

from coopgen.generator.headers import find_entry


@pytest.fixture(scope="session")
def fresh_models():
    """Freshly generated models of every lock entry (one parse each per test session)."""
    pytest.importorskip("clang.cindex")
    from coopgen.generator.pipeline import build_model

    cache = {}

    def get(cccl):
        if cccl not in cache:
            cache[cccl] = build_model(find_entry(cccl))
        return cache[cccl]
    return get
