"""``coopgen.TempStorage`` (coopgen.codegen.storage) and the storage two-phase objects need."""
from ..codegen.storage import SHARING, TempStorage  # noqa: F401


def kernel_temp_storage(*objects, sharing: str = "shared") -> tuple[int, int]:
    """(bytes, alignment) that two-phase primitives need together, before any launch:
    the largest of them ("shared") or all of them in aligned slices ("exclusive")."""
    if sharing not in SHARING:
        raise ValueError(f"kernel_temp_storage: sharing={sharing!r}; allowed: "
                         f"{', '.join(map(repr, SHARING))}")
    layouts = [(o.temp_storage_bytes, o.temp_storage_alignment) for o in objects]
    align = max((a for _, a in layouts), default=1)
    if sharing == "shared":
        return max((s for s, _ in layouts), default=0), align
    total = 0
    for size, a in layouts:
        total = -(-total // a) * a + size
    return -(-total // align) * align, align
