"""Declarative specs the generated modules are made of (one ``ClassSpec`` each); no logic."""
from dataclasses import dataclass


@dataclass(frozen=True)
class TParam:
    name: str  # C++ spelling
    kind: str  # "type" | "value" | "template"
    cpp_type: str
    default: str | None
    keyword: str  # stable Python keyword
    constraint: str = ""  # "power_of_two" when CUB's docs require it


@dataclass(frozen=True)
class PSpec:
    name: str
    role: str  # see coopgen.generator.roles.ROLES
    type: str  # spelled C++ type
    base: str  # the type without const/&/array: "T", "KeyT", "ReductionOp", "int"
    extent: str | None  # array extent for T (&)[N]
    default: str | None


@dataclass(frozen=True)
class MSpec:
    name: str
    signature: str
    kind: str  # "method" | "constructor"
    returns: str  # C++ return type ("void", "T", ...)
    params: tuple[PSpec, ...]
    static: bool = False
    tparams: tuple[str, ...] = ()  # the method's own template parameters (deduced by C++)
    hidden: bool = False  # undocumented in CUB (bound where the Pythonic table asks for it)
    excluded: str = ""  # why this release does not bind it (overrides.toml; ClassSpec.excluded)
    keywords: tuple[TParam, ...] = ()  # leading method template parameters: is_full_tile=


@dataclass(frozen=True)
class ClassSpec:
    name: str
    cpp: str  # "cub::BlockReduce"
    scope: str  # "block" | "warp"
    header: str
    temp_storage: str  # model TempStorage form
    template_params: tuple[TParam, ...]
    constructors: tuple[MSpec, ...]
    methods: tuple[MSpec, ...]
    brief: str = ""
    excluded: tuple[MSpec, ...] = ()  # public, not bound (MSpec.excluded): a call says why
    unstable: bool = False  # a cub::detail class: CUB may change it in any release
    #: a namespace-scope function (``cpp`` names it): its overloads are the methods, called
    #: with no object, no class template arguments and no temp storage
    function: bool = False

    @property
    def value_type(self) -> TParam | None:
        """The first type template parameter (``T``, ``KeyT``): what ``dtype=`` sets."""
        return next((t for t in self.template_params if t.kind == "type"), None)

    def overloads(self, name: str) -> tuple[MSpec, ...]:
        """The overloads of ``name``, the excluded ones last."""
        return tuple(m for m in self.methods + self.excluded if m.name == name)

    @property
    def method_names(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(m.name for m in self.methods + self.excluded))


@dataclass(frozen=True)
class EnumSpec:
    name: str
    values: tuple[tuple[str, int], ...]


@dataclass(frozen=True)
class PythonicSpec:
    """One snake_case function of the Pythonic surface (from the naming table)."""
    name: str  # "sum"
    scope: str  # "block" | "warp"
    cls: str  # "BlockReduce"
    methods: tuple[tuple[str, str], ...]  # (selector value, CUB method); ("", M) if one method
    select: str | None = None  # keyword whose string value picks the method
    needs: tuple[str, ...] = ()  # parameter names an overload must have
    excludes: tuple[str, ...] = ()  # parameter names an overload must not have
    # cuda.coop's call shape and object factories (pythonic.toml says what each field means)
    object: str | None = None  # "constructor", or the method whose call infers the class
    bind: tuple[str, ...] = ()  # arguments an object keeps (``methods``: its snake_case names)
    enum: str | None = None  # the IntEnum the selector values form
    args: tuple[str, ...] | None = None  # positional order in kernels; None: CUB's order
    rename: tuple[tuple[str, tuple[str, ...]], ...] = ()  # name -> CUB name(s)
    defaults: tuple[tuple[str, object], ...] = ()
    inplace: tuple[tuple[str, str], ...] = ()  # (omitted output, the input passed instead)
    fixed: tuple[tuple[str, object], ...] = ()  # arguments always passed
    host: tuple[str, ...] | None = None  # positional order of the two-phase host call
    instance: tuple[str, ...] | None = None  # positional order of a two-phase object's call
    deduced: tuple[str, ...] = ()  # accepted; C++ deduces them from the arrays
    since: tuple[tuple[str, str], ...] = ()  # (argument, the first CCCL that has it)
    identity: tuple[str, ...] = ()  # (argument, operator, unless): fill with the identity
    method_args: tuple[tuple[str, tuple[str, ...]], ...] = ()  # object method -> its order
    digits: tuple[str, ...] = ()  # (begin bit, end bit, digit extractor, radix bits)
    scalar_output: str | None = None  # returned, and no positional slot, for a scalar input
    only: tuple[tuple[str, object], ...] = ()  # (argument, its one value where CUB has none)


@dataclass(frozen=True)
class LimitSpec:
    """A combination CUB does not handle (generator/data/limits.toml): a call meeting every
    condition is refused at compile time with ``reason``."""
    cls: str
    methods: tuple[str, ...]  # () for every method
    reason: str
    template: tuple[tuple[str, str], ...] = ()  # (keyword, C++ argument) pairs
    below: tuple[tuple[str, int], ...] = ()  # (keyword, smallest allowed integer)
    params: tuple[str, ...] = ()  # the overload has one of these parameters
    operators: tuple[str, ...] = ()  # an operator argument is anything but these built-ins
    multi_dim_block: bool = False
    lone_odd_warp: bool = False  # a logical warp size not a power of two, block > one warp
    item_kinds: tuple[str, ...] = ()  # the items are of one of these kinds (struct, complex, ...)
    without: tuple[str, ...] = ()  # the overload has none of these parameters


#: Parameter roles the runtime binds (coopgen.resolve implements each; a test checks it).
BINDABLE_ROLES = frozenset({
    "input_array", "output_array", "inout_array", "input_scalar", "output_scalar", "inout_scalar",
    "count", "iterator_in", "iterator_out", "memory_inout", "operator", "prefix_callback",
    "temp_storage", "range_input", "range_output", "thread_rank"})

#: Functor parameter types the runtime can build from Python (coopgen.operators).
OPERATOR_KINDS = frozenset({"ReductionOp", "ScanOp", "CompareOp", "FlagOp", "DifferenceOpT",
                            "DigitExtractorT", "CountsCallback", "DecomposerT"})
