"""Where a kernel's coopgen storage lives: static shared memory, or dynamic shared memory once
the kernel would pass the 48 KB a kernel may declare statically.

A translation unit groups all its storage (implicit block storage, warp storage, every
``coopgen.TempStorage``) in one struct, ``coopgen_storage_t``, reached through
``coopgen_storage()``. The compiler knows the struct's size, so the translation unit itself
chooses the place: a ``__shared__`` object while the kernel's static shared memory stays within
the limit, else the tail of the launch's dynamic shared memory. In that case it also defines
``coopgen_dynamic_shared_need<bytes, alignment>``, a two-word ``__device__`` array the host reads
from the linked cubin (:func:`dynamic_requirement`) to size the launch (see ``launch_hook``).

Layout of dynamic shared memory at launch: where the kernel uses dynamic shared memory itself
(numba's ``cuda.shared.array(0, ...)``, sized by ``kernel[g, b, s, nbytes]``), the user's bytes
come first, from the base, and coopgen's storage after them: the device code finds it from
``%dynamic_smem_size``, so it needs no kernel argument. Otherwise the storage sits at the base,
at an address known when compiling, as in a C++ kernel (finding it at run time cost 1.3% of a
1024-thread radix sort).
"""
from __future__ import annotations

import re
import struct

#: Static shared memory a kernel may declare (CUDA's limit on every architecture).
STATIC_SHARED_LIMIT = 48 * 1024
#: Dynamic shared memory starts at least this aligned.
DYNAMIC_BASE_ALIGNMENT = 16
NEED_SYMBOL = "coopgen_dynamic_shared_need"


def storage_definition(members: list[tuple[str, str]], *, may_be_dynamic: bool,
                       other_static_bytes: int = 0, after_user_bytes: bool = True) -> str:
    """C++ for the translation unit's storage struct and ``coopgen_storage()``.

    ``members``: (C++ type, member name). ``may_be_dynamic``: only a kernel's own translation
    unit may move to dynamic memory (a device function's bundle is compiled once for every
    kernel that calls it and cannot know their layouts). ``other_static_bytes``: the kernel's
    static shared memory outside this struct (numba's shared arrays), counted toward the limit.
    ``after_user_bytes``: the kernel may use the launch's dynamic shared memory itself, so the
    storage goes after the user's bytes (found from ``%dynamic_smem_size``); else it sits at the
    base, at an address the compiler knows, as in a C++ kernel's ``extern __shared__`` storage.
    """
    body = "".join(f"  {t} {n};\n" for t, n in members)
    dynamic = (f"sizeof(coopgen_storage_t) + {other_static_bytes} > {STATIC_SHARED_LIMIT}"
               if may_be_dynamic else "false")
    base_align = DYNAMIC_BASE_ALIGNMENT
    after = "true" if after_user_bytes else "false"
    return f"""struct coopgen_storage_t {{
{body}}};
// Past the static limit the storage is dynamic shared memory; the launch adds what
// {NEED_SYMBOL} (read from the cubin) says.
static constexpr bool coopgen_storage_is_dynamic = {dynamic};
static constexpr bool coopgen_storage_after_user_bytes = {after};
template <unsigned long long Bytes, unsigned long long Alignment, unsigned long long AfterUser>
__device__ __attribute__((used)) unsigned long long {NEED_SYMBOL}[3] = {{Bytes, Alignment,
                                                                          AfterUser}};
namespace {{
template <bool Dynamic>
__device__ __forceinline__ coopgen_storage_t& coopgen_storage_in()
{{
  if constexpr (Dynamic) {{
    extern __shared__ __align__({base_align}) unsigned char coopgen_dynamic_shared[];
    // Dependent on Dynamic, so only instantiated (and defined in the cubin) in this branch.
    (void)&{NEED_SYMBOL}<Dynamic ? sizeof(coopgen_storage_t) : 0, alignof(coopgen_storage_t),
                         coopgen_storage_after_user_bytes>;
    constexpr unsigned int slack = alignof(coopgen_storage_t) > {base_align}
        ? alignof(coopgen_storage_t) - {base_align} : 0;
    unsigned int offset = 0;
    if constexpr (coopgen_storage_after_user_bytes) {{  // the launch's last bytes
      unsigned int size;
      asm("mov.u32 %0, %%dynamic_smem_size;" : "=r"(size));
      offset = size - unsigned(sizeof(coopgen_storage_t)) - slack;
    }}
    if constexpr (slack > 0) {{  // the base is only {base_align}-byte aligned
      const unsigned int base = unsigned(__cvta_generic_to_shared(coopgen_dynamic_shared));
      offset = ((base + offset + slack) & ~unsigned(alignof(coopgen_storage_t) - 1)) - base;
    }}
    return *reinterpret_cast<coopgen_storage_t*>(coopgen_dynamic_shared + offset);
  }} else {{
    __shared__ coopgen_storage_t coopgen_static_storage;
    return coopgen_static_storage;
  }}
}}
}}
static __device__ __forceinline__ coopgen_storage_t& coopgen_storage()
{{
  return coopgen_storage_in<coopgen_storage_is_dynamic>();
}}
"""


def launch_bytes(user_bytes: int, need: tuple[int, int, bool]) -> int:
    """Dynamic shared memory for a launch that asked for ``user_bytes``: coopgen's storage after
    the user's bytes (padded), or, where the kernel itself uses none, at the base over them;
    with room to align it where it needs more than the base's alignment."""
    size, align, after_user = need
    size += max(0, align - DYNAMIC_BASE_ALIGNMENT)
    if not after_user:
        return max(user_bytes, size)
    return -(-user_bytes // DYNAMIC_BASE_ALIGNMENT) * DYNAMIC_BASE_ALIGNMENT + size


# -- the requirement, read from a linked cubin (ELF) ------------------------------------------

_SECTION = struct.Struct("<IIQQQQIIQQ")
_SYMBOL = struct.Struct("<IBBHQQ")
_SHT_SYMTAB = 2


def dynamic_requirement(cubin: bytes) -> tuple[int, int, bool] | None:
    """(bytes, alignment, after the user's bytes) of the coopgen storage a linked kernel keeps in
    dynamic shared memory, or None when it keeps all its storage static. ``cubin``: bytes or a
    cuda.core ObjectCode."""
    data = bytes(getattr(cubin, "code", cubin))
    if data[:4] != b"\x7fELF" or data[4] != 2:  # ELFCLASS64
        raise ValueError("dynamic_requirement: not a 64-bit ELF cubin")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [_SECTION.unpack_from(data, shoff + i * shentsize) for i in range(shnum)]
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != _SHT_SYMTAB or not entsize:
            continue
        strings = sections[link][4]
        for i in range(size // entsize):
            name_at, _, _, shndx, value, sym_size = _SYMBOL.unpack_from(data, offset + i * entsize)
            start = strings + name_at
            name = data[start:data.index(b"\0", start)]
            if NEED_SYMBOL.encode() in name and sym_size == 24 and shndx < len(sections):
                sec = sections[shndx]
                size, align, after = struct.unpack_from("<QQQ", data, sec[4] + value - sec[3])
                return size, align, bool(after)
    return None


# -- the kernel's LLVM module ------------------------------------------------------------------
