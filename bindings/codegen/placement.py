"""Where a kernel's coopgen storage, one struct reached through ``coopgen_storage()``, lives:
static shared memory, or dynamic once the kernel would pass the 48 KB it may declare statically
(the compiler knows the size, so the translation unit chooses). Dynamic, it also defines
``coopgen_dynamic_shared_need<bytes, alignment, after user>``, which the host reads from the
cubin (:func:`dynamic_requirement`) to size the launch (``launch_hook``). Where the kernel uses
dynamic shared memory itself (``cuda.shared.array(0, ...)``) the storage follows the user's
bytes, found from ``%dynamic_smem_size``; else it sits at the base, at an address known when
compiling (finding it at run time cost 1.3% of a 1024-thread radix sort)."""
import re

#: Static shared memory a kernel may declare (CUDA's limit on every architecture).
STATIC_SHARED_LIMIT = 48 * 1024
#: Dynamic shared memory starts at least this aligned.
DYNAMIC_BASE_ALIGNMENT = 16
NEED_SYMBOL = "coopgen_dynamic_shared_need"


def storage_definition(members: list[tuple[str, str]], *, may_be_dynamic: bool,
                       other_static_bytes: int = 0, after_user_bytes: bool = True) -> str:
    """C++ for the storage struct of (C++ type, member name) ``members`` and
    ``coopgen_storage()``. Only a kernel's own translation unit ``may_be_dynamic`` (a device
    function's bundle serves every kernel calling it); ``other_static_bytes`` (numba's shared
    arrays) count toward the limit; ``after_user_bytes``: the kernel uses dynamic memory too."""
    body = "".join(f"  {t} {n};\n" for t, n in members)
    dynamic = (f"sizeof(coopgen_storage_t) + {other_static_bytes} > {STATIC_SHARED_LIMIT}"
               if may_be_dynamic else "false")
    base_align, after = DYNAMIC_BASE_ALIGNMENT, "true" if after_user_bytes else "false"
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


#: The need symbol's instantiation: its template arguments are the requirement.
_NEED = re.compile(rb"_Z\d+" + NEED_SYMBOL.encode() + rb"ILy(\d+)ELy(\d+)ELy(\d+)EE")


#: A name expression (NVRTC names its instantiation while compiling) whose mangled name holds
#: the requirement, 0 bytes when static: for a backend that must report it before linking
#: (LTO-IR may be compressed, so its symbols cannot be read).
NEED_EXPRESSION = (f"&{NEED_SYMBOL}<coopgen_storage_is_dynamic ? sizeof(coopgen_storage_t) : 0, "
                   "alignof(coopgen_storage_t), coopgen_storage_after_user_bytes>")


def named_requirement(lowered_name: str) -> tuple[int, int, bool] | None:
    """The requirement NEED_EXPRESSION's lowered name gives, or None when static."""
    found = _NEED.search(lowered_name.encode())
    if found is None or int(found[1]) == 0:
        return None
    return int(found[1]), int(found[2]), bool(int(found[3]))


def dynamic_requirement(cubin: bytes) -> tuple[int, int, bool] | None:
    """(bytes, alignment, after the user's bytes) of a linked kernel's storage in dynamic shared
    memory, or None when it is static. ``cubin``: bytes or a cuda.core ObjectCode. The values
    are read from the mangled name of the need symbol (Itanium: ``L y <value> E`` per unsigned
    long long template argument), which the cubin's symbol table holds only when dynamic."""
    data = bytes(getattr(cubin, "code", cubin))
    if data[:4] != b"\x7fELF" or data[4] != 2:  # ELFCLASS64
        raise ValueError("dynamic_requirement: not a 64-bit ELF cubin")
    found = _NEED.search(data)
    return None if found is None else (int(found[1]), int(found[2]), bool(int(found[3])))
