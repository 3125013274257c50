"""API reference emitter: model -> Markdown pages (``docs/api/<cccl>/``) and the runtime's docstrings.

One page per user-facing class: its CUB description, its template keywords, its temp storage,
then every bound overload with the C++ signature, the faithful and Pythonic spellings, each
parameter's role and how its value is supplied, and CUB's own text converted from Doxygen/RST
markup to Markdown. The same sections are the docstrings ``help(block.BlockScan.ExclusiveSum)``
and ``help(block.exclusive_sum)`` show (``docstrings.py`` in the generated package).

Like the other emitters this returns text only (generator/write.py writes it), reads the model
and the naming table (through ``emit.load_pythonic``) and nothing else, and iterates tuples in
model order so the output is deterministic.
"""
from __future__ import annotations

import functools
import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from .emit import (GENERATOR_VERSION, bindable, bound_functions, bound_methods, effective_return, load_pythonic,
                   method_keywords,
                   module_name, table_methods)
from .emit_types import TypeTable, class_help_lines, help_lines, page_lines, type_table
from .headers import LockEntry, tomllib  # tomllib: tomli on Python 3.10
from .model import ApiModel, ClassModel, Overload, Param
from .report import api_methods

ALIASES_PATH = Path(__file__).parent / "data" / "doc_aliases.toml"


@dataclass(frozen=True)
class DocContext:
    """What every section reads: the model, the Doxygen alias texts and the naming table's rows
    (dicts with emit.load_pythonic's keys: name, scope, cls, methods, args, rename, ...)."""
    model: ApiModel
    aliases: dict
    pythonic: tuple
    #: what the docstrings and the reference pages of a model both show, made once: each
    #: overload's section (``overload_lines``) and the supported-types table
    shared: dict = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def of(cls, model: ApiModel) -> "DocContext":
        """The context of ``model``: the last one made where it is the same model and the
        tables read the same (an entry's docstrings, reference pages and types page are made
        one after the other)."""
        made = cls(model, load_aliases(), tuple(load_pythonic(model)[0]))
        last = _LAST_CONTEXT[0] if _LAST_CONTEXT else None
        if last is not None and last.model is model and last.aliases == made.aliases \
                and last.pythonic == made.pythonic:
            return last
        _LAST_CONTEXT[:] = [made]
        return made

    def type_table(self, entry: LockEntry) -> TypeTable:
        key = ("types", entry)
        if key not in self.shared:
            self.shared[key] = type_table(entry, self.model)
        return self.shared[key]


_LAST_CONTEXT: list[DocContext] = []

BLOCK_DIMS = ("block_dim_x", "block_dim_y", "block_dim_z")
PER_THREAD = ("items_per_thread", "keys_per_thread")

#: Parameter role -> (what it is, how a Python call supplies it). ``{base}``/``{extent}`` are
#: the parameter's element type and array extent.
ROLE_TEXT = {
    "input_array": ("input array", "an array (`coopgen.local.array`/`shared.array`); its dtype "
                    "gives `{base}`{extent_text}"),
    "output_array": ("output array", "an array the call writes; its dtype gives `{base}`"
                     "{extent_text}"),
    "inout_array": ("in-out array", "an array read and written in place; its dtype gives "
                    "`{base}`{extent_text}"),
    "input_scalar": ("input value", "a scalar; it gives `{base}` when no array does, else it is "
                     "converted to it"),
    "output_scalar": ("output value", "omit it and it is returned; or pass a 1-element array"),
    "inout_scalar": ("in-out value", "omit it and it is returned; or pass a 1-element array "
                     "holding the value to update"),
    "count": ("count", "an integer"),
    "iterator_in": ("device memory read", "a device array (or a slice of one) the call reads"),
    "iterator_out": ("device memory written", "a device array (or a slice of one) the call "
                     "writes"),
    "memory_inout": ("memory read and written", "an array (shared or device memory); its dtype "
                     "gives `{base}`{extent_text}"),
    "operator": ("operator", "{operator_text}"),
    "prefix_callback": ("prefix callback", "`(function, state_array)`: a "
                        "`@cuda.jit(device=True)` function called by the first warp with the "
                        "block aggregate, returning the prefix; it may read and write the state"),
    "temp_storage": ("temp storage", "only as `temp_storage=`: a "
                     "`coopgen.shared.array(nbytes, np.uint8)` or a `coopgen.TempStorage()`; "
                     "omitted, coopgen provides it"),
    "range_input": ("input range", "a `coopgen.local`/`shared` array of compile-time length"
                    "{extent_text}"),
    "range_output": ("output range", "a `coopgen.local`/`shared` array of compile-time length "
                     "the call writes{extent_text}"),
    "tag": ("tag", "not bound"),
}

#: Operator parameter type -> examples of what a call passes.
OPERATOR_EXAMPLES = {
    "ReductionOp": 'a built-in by name (`"+"`, `"min"`, `"max"`, ...)',
    "ScanOp": 'a built-in by name (`"+"`, `"min"`, `"max"`, ...)',
    "CompareOp": 'a built-in by name (`"<"`, `">"`)',
    "FlagOp": 'a built-in by name (`"!="`, `"=="`)',
    "DifferenceOpT": 'a built-in by name (`"-"`, `"+"`, ...)',
    "DecomposerT": "a tuple of a record dtype's field names, most significant first",
}


def header_comment(entry: LockEntry) -> str:
    return (f"<!-- Generated by coopgen.generator v{GENERATOR_VERSION} from cub_headers.lock entry "
            f"CCCL {entry.cccl} ({entry.wheel}) with `coopgen generate`. Do not edit. -->")


def load_aliases(path: Path = ALIASES_PATH) -> dict[str, str]:
    with open(path, "rb") as f:
        return tomllib.load(f)


# --- CUB doc markup -> Markdown ---------------------------------------------------------------

_COMMAND = re.compile(r"^\s*@(param|tparam|returns?|brief|par|note|name|code|endcode)\b(.*)$")


def split_doc(doc: str) -> tuple[str, dict[str, str], dict[str, str], str]:
    """(description, {param: text}, {template param: text}, returns) of a doc comment. A block
    command (``@param``, ``@tparam``, ``@return``) runs to the next one or to a paragraph
    command; everything else is description."""
    desc, params, tparams, returns = [], {}, {}, []
    target = desc
    for line in doc.splitlines():
        m = _COMMAND.match(line)
        if m is None:
            target.append(line)
            continue
        cmd, rest = m.group(1), m.group(2)
        if cmd in ("param", "tparam"):
            pm = re.match(r"(?:\[[a-z, ]+\])?\s+(\w+)\s*(.*)", rest)
            if pm is None:
                target.append(line)
                continue
            table = params if cmd == "param" else tparams
            target = table.setdefault(pm.group(1), [])
            target.append(pm.group(2))
        elif cmd in ("return", "returns"):
            target = returns
            target.append(rest)
        elif cmd == "name":  # a Doxygen member-group title: not part of this member's text
            target = []
        else:
            target = desc
            desc.append(line)
    text = lambda lines: textwrap.dedent("\n".join(lines)).strip("\n")  # noqa: E731
    return (text(desc), {k: text(v) for k, v in params.items()},
            {k: text(v) for k, v in tparams.items()}, text(returns))


#: (text every match holds, pattern, replacement) of the inline markup, in the order applied:
#: a rule whose text is absent from a line cannot match there, and is skipped.
_INLINE = tuple((needle, re.compile(pattern), repl) for needle, pattern, repl in (
    ("![", r"!\[[^\]]*\]\((?!https?:)[^)]*\)", ""),  # CUB's own images (not shipped)
    ("<tt>", r"<tt>(.*?)</tt>", r"`\1`"),
    ("<b>", r"<b>(.*?)</b>", r"**\1**"),
    (".html", r"\[([^\]]+)\]\([^)]*\.html[^)]*\)", r"\1"),  # links into CUB's site
    (":ref:`", r":ref:`([^`<]+?)\s*<[^`>]+>`", r"\1"),
    (":ref:`", r":ref:`([^`]+)`", r"\1"),
    (":sub:`", r"\\ ?:sub:`([^`]+)`", r"<sub>\1</sub>"),
    (":sub:`", r":sub:`([^`]+)`", r"<sub>\1</sub>"),
    (":", r":\w+:(?:\w+:)?`([^`]+)`", r"`\1`"),
    ("``", r"``([^`]+)``", r"`\1`"),
    ("@", r"@[pc]\s+(\w+)", r"`\1`"),
    ("@", r"@e\s+(\w+)", r"*\1*"),  # Doxygen's emphasis
))
_ALIAS = re.compile(r"@(\w+)")


def _inline(text: str, aliases: dict[str, str]) -> str:
    """Inline markup: RST roles and literals, Doxygen words, escapes."""
    for needle, pattern, repl in _INLINE:
        if needle in text:
            text = pattern.sub(repl, text)
    if "@" in text:
        text = _ALIAS.sub(lambda m: aliases.get(m.group(1), m.group(0)), text)
    return text.replace("\\ ", "")


def _indented_block(lines: list[str], i: int) -> tuple[list[str], int]:
    """The lines indented under an RST directive starting after line ``i`` (blank lines kept
    inside), dedented; and the index of the first line after it."""
    j, block = i + 1, []
    while j < len(lines) and (not lines[j].strip() or lines[j].startswith((" ", "\t"))):
        block.append(lines[j])
        j += 1
    while block and not block[-1].strip():
        block.pop()
        j -= 1
    indent = min((len(b) - len(b.lstrip()) for b in block if b.strip()), default=0)
    return [b[indent:] for b in block], j


def _trim(lines: list[str]) -> list[str]:
    """Without leading and trailing blank lines."""
    start = next((k for k, ln in enumerate(lines) if ln.strip()), len(lines))
    end = len(lines) - next((k for k, ln in enumerate(reversed(lines)) if ln.strip()), 0)
    return lines[start:end]


def to_markdown(text: str, aliases: dict[str, str]) -> str:
    """CUB's doc markup (Doxygen commands, RST directives and roles) as Markdown."""
    return _markdown(text, tuple(aliases.items()))


@functools.lru_cache(maxsize=None)  # each overload's text is shown in its page and docstrings
def _markdown(text: str, alias_items: tuple[tuple[str, str], ...]) -> str:
    aliases = dict(alias_items)
    lines = [ln for ln in text.splitlines()
             if ln.strip() not in ("@rst", "@endrst", "@{", "@}", "@par")]
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        directive = re.match(r"\.\.\s+([\w-]+)::\s*(.*)", stripped)
        if directive:
            kind, arg = directive.groups()
            body, i = _indented_block(lines, i)
            options = [b for b in body if re.match(r":\w+:", b)]
            body = [b for b in body if b not in options]
            if kind == "code-block":
                out += ["", f"```{arg or 'c++'}"] + _trim(body) + ["```", ""]
            elif kind == "literalinclude":
                source = re.sub(r"^(\.\./)+", "", arg)
                out += ["", f"*(CUB's documentation shows an example from `{source}` here.)*", ""]
            elif kind == "versionadded":
                extra = " ".join(b.strip() for b in body if b.strip())
                out += ["", f"*New in CCCL {arg}.* {_inline(extra, aliases)}".rstrip(), ""]
            else:  # note, warning, ...
                extra = " ".join(b.strip() for b in body if b.strip())
                out += ["", f"**{kind.capitalize()}:** {_inline(extra, aliases)}", ""]
            continue
        if stripped == "@endcode":  # CUB closes some RST code blocks with it too
            i += 1
            continue
        if stripped == "@code":
            body, code = [], i + 1
            while code < len(lines) and lines[code].strip() != "@endcode":
                body.append(lines[code])
                code += 1
            out += ["", "```c++"] + _trim(body) + ["```", ""]
            i = code + 1
            continue
        underline = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if stripped and re.fullmatch(r"([=+\-~^*#])\1{2,}", underline) and \
                len(underline) >= len(stripped) - 1:
            out += ["", f"**{_inline(stripped, aliases)}**", ""]
            i += 2
            continue
        cmd = re.match(r"@(brief|par|note)\s*(.*)", stripped)
        if cmd:
            name, rest = cmd.groups()
            if name == "par":  # a Doxygen paragraph title
                out += ["", f"**{_inline(rest, aliases)}**", ""] if rest else [""]
            else:
                lead = "**Note:** " if name == "note" else ""
                out.append(lead + _inline(rest, aliases))
            i += 1
            continue
        # Deep indents are Doxygen's alignment, not Markdown code blocks.
        indent = len(line) - len(line.lstrip())
        out.append(_inline(line.strip() if indent >= 4 else line.rstrip(), aliases))
        i += 1
    parts = re.split(r"(```.*?```)", "\n".join(out), flags=re.S)
    md = "".join(part if part.startswith("```") else  # literals that span lines
                 re.sub(r"``(.+?)``", r"`\1`", part, flags=re.S) for part in parts)
    return re.sub(r"\n{3,}", "\n\n", md).strip("\n")


def one_line(text: str, aliases: dict[str, str]) -> str:
    """Markup as one Markdown line (a table cell): code blocks become inline, pipes escaped."""
    md = to_markdown(text, aliases)
    md = re.sub(r"```\w*\n(.*?)\n```", lambda m: " ".join(f"`{x.strip()}`" for x in
                                                      m.group(1).splitlines() if x.strip()),
                md, flags=re.S)
    return " ".join(md.split()).replace("|", "\\|")


# --- spellings --------------------------------------------------------------------------------

def enum_choices(model: ApiModel, cpp_type: str) -> tuple[str, ...]:
    """Allowed string values of an enum keyword: CUB's value names without the prefix they all
    share, lower case (``BLOCK_LOAD_WARP_TRANSPOSE`` -> ``"warp_transpose"``)."""
    try:
        names = [v.name for v in model.enum(cpp_type).values]
    except KeyError:
        return ()
    prefix = os.path.commonprefix(names)
    prefix = prefix[:prefix.rfind("_") + 1] if len(names) > 1 else ""
    return tuple((n[len(prefix):] or n).lower() for n in names)


def cpp_declaration(ov: Overload) -> str:
    """``template <...>\\nvoid Name(T (&input)[N], ...)`` with parameter names."""
    params = []
    for p in ov.params:
        if "(&)" in p.type:
            decl = p.type.replace("(&)", f"(&{p.name})")
        elif re.search(r"\[\w+\]$", p.type):
            decl = re.sub(r"(\[\w+\])$", rf" {p.name}\1", p.type)
        else:
            decl = f"{p.type}{p.name}" if p.type.endswith("&") else f"{p.type} {p.name}"
        if p.default is not None:
            decl += f" = {p.default}"
        params.append(decl)
    head = ""
    if _named_tparams(ov):
        head = "template <" + ", ".join(
            (f"typename {t.name}" if t.kind == "type" else f"{t.cpp_type} {t.name}")
            for t in _named_tparams(ov)) + ">\n"
    ret = "" if ov.kind == "constructor" else effective_return(ov.return_type) + " "
    static = "static " if ov.static else ""
    return f"{head}{static}{ret}{ov.name}({', '.join(params)})"


def _named_tparams(ov: Overload) -> tuple:
    """The method's template parameters a reader can name (SFINAE leaves anonymous and
    reserved ones in some overloads)."""
    return tuple(t for t in ov.template_params if t.name and not t.name.startswith("__"))


def _returned(ov: Overload, obj: str = "obj") -> list[str]:
    """What a call returns: the object a constructor makes, a non-void result, then the
    outputs left out of the call."""
    names = [obj] if ov.kind == "constructor" else \
        [] if effective_return(ov.return_type) == "void" else ["result"]
    return names + [p.name for p in ov.params if p.role in ("output_scalar", "inout_scalar")]


def _call_args(ov: Overload, drop: tuple = ()) -> str:
    """Arguments in C++ order: returned outputs left out, temp storage as the last keyword."""
    args = []
    for p in ov.params:
        if p.name in drop or p.role in ("output_scalar", "inout_scalar", "temp_storage"):
            continue
        if p.default is not None:
            args.append(f"{p.name}={p.default}")
        else:
            args.append(p.name)
    args += [f"{t.keyword}={t.keyword}" for t in method_keywords(ov)]
    if any(p.role == "temp_storage" for p in ov.params):
        args.append("temp_storage=temp_storage")
    return ", ".join(args)


def _pythonic_args(ov: Overload, slots: tuple, rename: tuple) -> str:
    """A Pythonic call in cuda.coop's shape: its names for CUB's parameters, positional while
    they follow the function's positional order, keywords after."""
    coop_name = {cub: name for name, cubs in rename for cub in cubs}
    given = [coop_name.get(p.name, p.name) for p in ov.params
             if p.role not in ("output_scalar", "inout_scalar", "temp_storage")]
    positional = []
    for slot in slots:
        if slot not in given:
            break
        positional.append(slot)
    args = positional + [f"{n}={n}" for n in given if n not in positional]
    if any(p.role == "temp_storage" for p in ov.params):
        args.append("temp_storage=temp_storage")
    return ", ".join(args)


def _assign(targets: list[str], call: str) -> str:
    return f"{', '.join(targets)} = {call}" if targets else call


def faithful_spelling(cls: ClassModel, ov: Overload) -> str:
    if ov.kind in ("constructor", "function"):
        return _assign(_returned(ov), f"{cls.scope}.{cls.name}({_call_args(ov)})")
    receiver = "obj" if _is_object_method(cls) else f"{cls.scope}.{cls.name}"
    return _assign(_returned(ov), f"{receiver}.{ov.name}({_call_args(ov)})")


def _is_object_method(cls: ClassModel) -> bool:
    """Classes whose state lives between calls (a constructor taking arguments, or methods that
    only make sense together) are called through a constructed object."""
    return any(p.role != "temp_storage" for c in cls.constructors for p in c.params)


def _matches(ov: Overload, row: dict) -> bool:
    """Whether a naming-table row's ``needs``/``excludes`` filters admit the overload."""
    names = {p.name for p in ov.params}
    return all(n in names for n in row["needs"]) and not any(n in names for n in row["excludes"])


def _rows_of(ctx: DocContext, cls: ClassModel) -> tuple[dict, ...]:
    return tuple(row for row in ctx.pythonic if row["cls"] == cls.name)


def pythonic_signature(row: dict) -> str:
    """``block.load(src, dst, items_per_thread, ...)``: a Pythonic function's positional order
    (``args`` of its naming-table row; without one, CUB's parameter order)."""
    args = row.get("args")
    return f"{row['scope']}.{row['name']}({', '.join(args)})" if args else ""


def pythonic_call_lines(row: dict) -> list[str]:
    """The call shapes and defaults a naming-table row gives a Pythonic function."""
    lines = []
    if row.get("args"):
        lines.append(f"- In kernels: `{pythonic_signature(row)}`; more positional arguments "
                     "than these are an error, any of them may be given by keyword.")
    if row.get("host"):
        lines.append(f"- Two-phase, on the host: `{row['scope']}.{row['name']}"
                     f"({', '.join(row['host'])})` returns an object to call in kernels.")
    if row.get("defaults"):
        lines.append("- Defaults: " + ", ".join(f"`{k}={v!r}`" for k, v in row["defaults"]) + ".")
    if row.get("rename"):
        lines.append("- CUB's names are accepted as keywords too: " + ", ".join(
            f"`{cub}=` for `{name}`" for name, cubs in row["rename"] for cub in cubs
            if cub != name) + ".")
    return lines + [""] if lines else []


def pythonic_names(ctx: DocContext, cls: ClassModel, ov: Overload) -> dict[str, str]:
    """CUB parameter name -> the name the Pythonic functions reaching ``ov`` give it."""
    out: dict[str, str] = {}
    for row in _rows_of(ctx, cls):
        if any(ov.name == m for _, m in row["methods"]) and _matches(ov, row):
            for name, cubs in row.get("rename", ()):
                out.update({cub: name for cub in cubs if cub != name})
    return out


def pythonic_spellings(ctx: DocContext, cls: ClassModel, ov: Overload) -> list[str]:
    """The Pythonic calls (from the naming table) that reach this overload."""
    out = []
    for row in _rows_of(ctx, cls):
        name, scope, methods, select, obj = (row[k] for k in ("name", "scope", "methods",
                                                                "select", "object"))
        slots, rename = row.get("args"), row.get("rename", ())
        if obj:
            var = "".join(word[0] for word in name.split("_"))
            if obj == "constructor" and ov.kind == "constructor":
                out.append(_assign(_returned(ov, var), f"{scope}.{name}({_call_args(ov)})"))
            if ov.kind == "method" and ov.name == obj:
                out.append(f"{var} = {scope}.{name}({_call_args(ov)})")
            for alias, method in methods:
                if ov.kind == "method" and ov.name == method:
                    out.append(_assign(_returned(ov),
                                       f"{var}.{alias}({_call_args(ov, drop=row['bind'])})"))
            continue
        for selector, method in methods:
            if ov.kind != "method" or ov.name != method or not _matches(ov, row):
                continue
            args = _call_args(ov) if slots is None else _pythonic_args(ov, slots, rename)
            if select:
                args = f'{args}, {select}="{selector}"' if args else f'{select}="{selector}"'
            out.append(_assign(_returned(ov), f"{scope}.{name}({args})"))
    return out


def parameter_rows(ov: Overload, doc_params: dict[str, str], aliases: dict[str, str],
                   pythonic: dict[str, str] | None = None) -> list[str]:
    """One row per C++ parameter; ``pythonic`` gives the Pythonic functions' names for it."""
    pythonic = pythonic or {}
    rows = ["| parameter | C++ type | role | in Python | CUB's description |",
            "|---|---|---|---|---|"]
    for p in ov.params:
        what, how = ROLE_TEXT.get(p.role, (p.role, ""))
        how = how.format(base=_base(p), extent_text=_extent_text(p),
                         operator_text=_operator_text(p))
        if p.default is not None:
            how += f"; optional, default `{p.default}`"
        desc = one_line(doc_params.get(p.name, ""), aliases)
        name = f"`{p.name}`" + (f" (Pythonic `{pythonic[p.name]}`)" if p.name in pythonic else "")
        rows.append(f"| {name} | `{p.type}` | {what} | {how} | {desc} |")
    return rows


def _base(p: Param) -> str:
    return re.sub(r"^const\s+|\s*&+$", "", p.array_elem or p.type).split("[")[0].strip()


def _extent_text(p: Param) -> str:
    if not p.array_extent:
        return ""
    keyword = " (or `items_per_thread=`)" if re.search(r"PER_THREAD|PerThread", p.array_extent) \
        else ""
    return f", its length `{p.array_extent}`{keyword}"


def _operator_text(p: Param) -> str:
    base = _base(p)
    example = OPERATOR_EXAMPLES.get(base)
    fn = "a `@cuda.jit(device=True)` function, or `(function, state_array)` for a stateful one"
    return f"{example}, or {fn}" if example else fn


# --- sections ---------------------------------------------------------------------------------

def overload_lines(ctx: DocContext, cls: ClassModel, ov: Overload) -> list[str]:
    """An overload's section: its reference page's and its docstrings' (made once a context)."""
    # by identity (hashing a class model walks all of it): the entry keeps both objects alive,
    # so their ids are not reused while the context lives
    key = ("overload", id(cls), id(ov))
    if key not in ctx.shared:
        ctx.shared[key] = (cls, ov, _overload_lines(ctx, cls, ov))
    return list(ctx.shared[key][2])


def _overload_lines(ctx: DocContext, cls: ClassModel, ov: Overload) -> list[str]:
    aliases = ctx.aliases
    desc, doc_params, doc_tparams, returns = split_doc(ov.doc or ov.brief)
    lines = [f"#### `{ov.signature}`", "", "```c++", cpp_declaration(ov), "```", "",
             f"- Faithful: `{faithful_spelling(cls, ov)}`"]
    lines += [f"- Pythonic: `{s}`" for s in pythonic_spellings(ctx, cls, ov)]
    lines.append("")
    if ov.params:
        lines += parameter_rows(ov, doc_params, aliases, pythonic_names(ctx, cls, ov)) + [""]
    for t in _named_tparams(ov):
        keyword = next((k for k in method_keywords(ov) if k.name == t.name), None)
        how = (f"from `{keyword.keyword}=` (required)" if keyword.default is None else
               f"from `{keyword.keyword}=`, default `{keyword.default}`") if keyword else \
            "inferred from the arguments" if t.kind == "type" else \
            "inferred from the arrays' lengths" if t.name in {p.array_extent for p in ov.params} \
            else "from `items_per_thread=`" if re.search(r"PER_THREAD|PerThread", t.name) \
            else "deduced by C++"
        text = one_line(doc_tparams.get(t.name, ""), aliases)
        lines.append(f"- Method template parameter `{t.name}`: {how}. {text}".rstrip())
    if _named_tparams(ov):
        lines.append("")
    if desc.strip():
        lines += [to_markdown(desc, aliases), ""]
    if returns:
        lines += [f"**Returns:** {one_line(returns, aliases)}", ""]
    return lines


def method_lines(ctx: DocContext, cls: ClassModel, name: str,
                 overloads: tuple[Overload, ...]) -> list[str]:
    lines = [f"### {name}", "", *unstable_lines(cls)]
    for ov in overloads:
        lines += overload_lines(ctx, cls, ov)
    return lines


def template_rows(model: ApiModel, cls: ClassModel) -> list[str]:
    rows = ["| keyword | C++ | default | values |", "|---|---|---|---|"]
    dims = [t.name for t in cls.template_params if t.keyword in BLOCK_DIMS]
    value_type = next((t for t in cls.template_params if t.kind == "type"), None)
    for t in cls.template_params:
        if not t.keyword:  # internal to CUB (roles.is_internal): its default, never a keyword
            continue
        if t.keyword in BLOCK_DIMS:
            if t.keyword == "block_dim_x":
                rows.append(f"| `threads_per_block` | `{'`, `'.join(dims)}` | the launch's block "
                            f"shape | an int, or a 2- or 3-tuple |")
            continue
        default = f"`{t.default}`" if t.default is not None else "required"
        if t is value_type:
            rows.append(f"| `{t.keyword}` (`dtype`) | `{t.name}` | inferred from the arrays | "
                        f"a dtype: the first positional argument on the host |")
            continue
        if t.kind == "type":
            values = "a dtype"
            default = default if t.default is not None else "inferred from the arguments"
        elif enum_choices(model, t.cpp_type):
            values = ", ".join(f'`"{c}"`' for c in enum_choices(model, t.cpp_type))
            if t.default is not None:
                short = enum_choices(model, t.cpp_type)[
                    [v.name for v in model.enum(t.cpp_type).values].index(t.default)] \
                    if t.default in [v.name for v in model.enum(t.cpp_type).values] else None
                default = f'`"{short}"`' if short else default
        elif t.cpp_type == "bool":
            values = "`True`, `False`"
        else:
            values = f"an integer (`{t.cpp_type}`)"
            if t.constraint == "power_of_two":
                values += ", a power of two"
        if t.keyword in PER_THREAD:
            default = "inferred from the arrays' lengths"
        elif t.keyword == "logical_warp_threads":
            default = "32"
            values = "1 to 32" + (", a power of two" if t.constraint == "power_of_two" else "")
        rows.append(f"| `{t.keyword}` | `{t.name}` | {default} | {values} |")
    return rows


def temp_storage_lines(cls: ClassModel) -> list[str]:
    if cls.temp_storage.form == "none":
        return ["No temp storage: calls use no shared memory.", ""]
    example = f"{cls.scope}.{cls.name}(np.int32, ...)"
    return [f"CUB's `{cls.name}::TempStorage` is implicit by default: coopgen puts it in one "
            "`__shared__` union per kernel and adds the barriers its reuse needs. To pass it "
            "yourself, give `temp_storage=` a `coopgen.shared.array(nbytes, np.uint8)` or a "
            "`coopgen.TempStorage()` made on the host (sized from all its uses). Its size and "
            f"alignment are known before any launch: `{example}.temp_storage_bytes` and "
            "`.temp_storage_alignment`.", ""]


#: The warning every page and docstring of a cub::detail class carries.
UNSTABLE_WARNING = ("**Unstable:** `{qualname}` is in CUB's `detail` namespace. CUB may change "
                    "or remove it in any release, without notice; coopgen binds it as CUB has "
                    "it in each release (`coopgen diff` marks its changes `[detail]`), and "
                    "`coopgen.coop` does not offer it.")


def unstable_lines(cls: ClassModel) -> list[str]:
    return [UNSTABLE_WARNING.format(qualname=cls.qualname), ""] if cls.unstable else []


def class_intro_lines(ctx: DocContext, cls: ClassModel) -> list[str]:
    model, aliases = ctx.model, ctx.aliases
    if cls.methods and cls.methods[0].kind == "function":  # FunctionModel.as_class
        return [f"# {cls.scope}.{cls.name}", "",
                f"`{cls.qualname}` from `<{cls.file}>`, CCCL {model.cccl}: a namespace-scope "
                f"function, called with no object and no temp storage.", "",
                *unstable_lines(cls), to_markdown(cls.brief, aliases), ""]
    lines = [f"# {cls.scope}.{cls.name}", "",
             f"`{cls.qualname}` from `<{cls.file}>`, CCCL {model.cccl}.", "",
             *unstable_lines(cls),
             to_markdown(cls.brief, aliases), "",
             "## Template keywords", ""]
    lines += template_rows(model, cls) + ["", "## Temp storage", ""]
    lines += temp_storage_lines(cls)
    return lines


def bound_overloads(ctx: DocContext, cls: ClassModel) -> tuple[Overload, ...]:
    """What the bindings bind: constructors, the public methods and the hidden ones the
    naming table names (emit.bound_methods)."""
    named = table_methods(_rows_of(ctx, cls)).get(cls.name, frozenset())
    return tuple(o for o in cls.constructors if bindable(o, cls)) + bound_methods(cls, named)


def _method_groups(ctx: DocContext, cls: ClassModel) -> list[tuple[str, tuple[Overload, ...]]]:
    names: list[str] = []
    bound = bound_overloads(ctx, cls)
    for o in bound:
        if o.name not in names:
            names.append(o.name)
    return [(n, tuple(o for o in bound if o.name == n)) for n in names]


def _not_bound_lines(cls: ClassModel) -> list[str]:
    missing = [o for o in cls.constructors + api_methods(cls) if not bindable(o, cls)]
    if not missing:
        return []
    lines = ["## Not bound", ""]
    lines += [f"- `{o.signature}`: parameter roles "
              f"{', '.join(sorted({p.role for p in o.params}))}" for o in missing]
    return lines + [""]


def _excluded_lines(cls: ClassModel) -> list[str]:
    excluded = [o for o in cls.methods if o.excluded and not o.hidden]
    if not excluded:
        return []
    return ["## Excluded", ""] + [f"- `{o.signature}`: {o.excluded}" for o in excluded] + [""]


def class_page(entry: LockEntry, ctx: DocContext, cls: ClassModel) -> str:
    lines = [header_comment(entry), ""] + class_intro_lines(ctx, cls)
    groups = _method_groups(ctx, cls)
    lines += ["## Overloads" if cls.methods[0].kind == "function" else "## Methods", ""]
    lines += [f"- [{n}](#{n.lower()}) ({len(o)} overload{'s' * (len(o) > 1)})" for n, o in groups]
    lines.append("")
    for name, overloads in groups:
        lines += method_lines(ctx, cls, name, overloads)
    lines += _excluded_lines(cls)
    lines += _not_bound_lines(cls)
    return _finish(lines)


def _finish(lines: list[str]) -> str:
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n") + "\n"


def index_page(entry: LockEntry, ctx: DocContext, classes: list[ClassModel],
               functions: list[ClassModel] = ()) -> str:
    model, aliases = ctx.model, ctx.aliases
    lines = [header_comment(entry), "", f"# API reference: CCCL {entry.cccl}", "",
             f"Generated from the headers of `{entry.wheel}` ({len(classes)} classes, "
             f"{sum(len(bound_overloads(ctx, c)) for c in classes)} bound overloads).", "",
             "## Classes", "", "| class | description | bound overloads |", "|---|---|---|"]
    lines += [f"| [{c.scope}.{c.name}]({module_name(c)}.md) | "
              f"{'**unstable** (`cub::detail`). ' * c.unstable}{one_line(c.brief, aliases)} | "
              f"{len(bound_overloads(ctx, c))} |" for c in classes]
    lines += ["", "## Free functions", "", "CUB's namespace-scope functions of the bound headers "
              "(`cub/block`, `cub/warp`, `cub/thread`, `cub/util_ptx.cuh`).", "",
              "| function | header | description | bound overloads |", "|---|---|---|---|"]
    lines += [f"| [{c.scope}.{c.name}]({module_name(c)}.md) | `{c.file}` | "
              f"{one_line(c.brief, aliases)} | {len(bound_overloads(ctx, c))} |"
              for c in functions]
    lines += ["", "## Pythonic functions", "", "| function | arguments, in order | CUB |",
              "|---|---|---|"]
    by_name = {c.name: c for c in list(classes) + list(functions)}
    for row in ctx.pythonic:
        cls_name = row["cls"]
        page = f"{module_name(by_name[cls_name])}.md"
        targets = ", ".join(f"[{cls_name}.{m}]({page}#{m.lower()})" for _, m in row["methods"])
        order = f"`{', '.join(row['args'])}`" if row.get("args") else "CUB's order"
        lines.append(f"| `{row['scope']}.{row['name']}` | {order} | {targets} |")
    lines += ["", "## Enums", "", "| enum | values |", "|---|---|"]
    for e in model.enums:
        lines.append(f"| `{e.qualname}` | "
                     f"{', '.join(f'`{v.name}`' for v in e.values)} |")
    return _finish(lines)


def emit_docs(entry: LockEntry, model: ApiModel) -> list[tuple[str, str]]:
    """[(file name, Markdown)] of one lock entry's reference: an index and a page per class."""
    ctx = DocContext.of(model)
    classes = [c for c in model.classes if c.user_facing]
    functions = bound_functions(model)
    files = [("index.md", index_page(entry, ctx, classes, functions))]
    files += [(f"{module_name(c)}.md", class_page(entry, ctx, c)) for c in classes + functions]
    return files


def emit_api_index(entries: tuple[LockEntry, ...]) -> str:
    """``docs/api/index.md``: one link per lock entry."""
    lines = [f"<!-- Generated by coopgen.generator v{GENERATOR_VERSION} from cub_headers.lock with "
             "`coopgen generate`. Do not edit. -->", "", "# API reference", "",
             "One reference per CUB release in `cub_headers.lock`; the first is the default "
             "(`COOPGEN_CCCL` selects another).", ""]
    lines += [f"- [CCCL {e.cccl}]({e.cccl}/index.md) (`{e.wheel}`)" for e in entries]
    lines += ["", "[The release matrix](releases.md) shows which overloads each release binds; "
              "[Supported types](types.md), which item types each primitive takes.", ""]
    return _finish(lines)


def _matrix_cell(status: str) -> str:
    return {"bound": "bound", "new": "**new**", "": "", "absent": ""}.get(status, status)


def overload_status(models: list[ApiModel], bound: list[frozenset[str]]) -> dict:
    """{class: {overload (stable signature): [status per model]}}, models oldest first; a status
    is "bound", "new" (bound, and absent from the release before), "excluded: reason" or
    "not bound", or "" where the release lacks the overload."""
    from .report import normalized_signature

    table: dict[str, dict[str, list[str]]] = {}
    for i, (model, keys) in enumerate(zip(models, bound)):
        for cls in model.classes:
            if not cls.user_facing:
                continue
            rows = table.setdefault(cls.name, {})
            for ov in cls.constructors + tuple(o for o in cls.methods if not o.hidden):
                sig = normalized_signature(cls, ov, model)
                cells = rows.setdefault(sig, [""] * len(models))
                if f"{cls.name}::{ov.signature}" in keys:
                    cells[i] = "new" if i and not cells[i - 1] else "bound"
                elif ov.excluded:
                    cells[i] = ov.excluded
                else:
                    cells[i] = "not bound"
    return table


def emit_release_matrix(entries: tuple[LockEntry, ...], models: list[ApiModel],
                        bound: list[frozenset[str]]) -> str:
    """``docs/api/releases.md``: class x release, then each class's overloads per release."""
    order = sorted(range(len(entries)), key=lambda i: tuple(map(int, entries[i].cccl.split("."))))
    entries = tuple(entries[i] for i in order)
    table = overload_status([models[i] for i in order], [bound[i] for i in order])
    head = "| class | " + " | ".join(f"[{e.cccl}]({e.cccl}/index.md)" for e in entries) + " |"
    rule = "|---|" + "---|" * len(entries)
    lines = [f"<!-- Generated by coopgen.generator v{GENERATOR_VERSION} from cub_headers.lock with "
             "`coopgen generate`. Do not edit. -->", "", "# Release matrix", "",
             f"Which CUB overloads each release in `cub_headers.lock` binds, oldest first "
             f"(CCCL {models[0].cccl} is the default; `COOPGEN_CCCL` selects another). A cell "
             "counts the overloads bound, those new in that release (bound, and absent from the "
             "release before) and those excluded there, with the reason in the class's table.",
             "", "## Classes", "", head, rule]
    for cls, rows in table.items():
        cells = []
        for i in range(len(entries)):
            column = [r[i] for r in rows.values()]
            if not any(column):
                cells.append("")
                continue
            n_bound = sum(c in ("bound", "new") for c in column)
            parts = [f"{n_bound} bound"]
            if column.count("new"):
                parts.append(f"{column.count('new')} new")
            excluded = sum(c.startswith("excluded") for c in column)
            if excluded:
                parts.append(f"{excluded} excluded")
            cells.append(", ".join(parts))
        lines.append(f"| [{cls}](#{cls.lower()}) | " + " | ".join(cells) + " |")
    for cls, rows in table.items():
        lines += ["", f"## {cls}", "", "| overload | " + " | ".join(e.cccl for e in entries)
                  + " |", rule]
        lines += [f"| `{sig.replace('|', chr(92) + '|')}` | "
                  + " | ".join(_matrix_cell(c).replace("|", "\\|") for c in cells) + " |"
                  for sig, cells in rows.items()]
    return _finish(lines)


def emit_types_page(entry: LockEntry, model: ApiModel) -> str:
    """``docs/api/types.md``: the item types each primitive takes (emit_types)."""
    table = DocContext.of(model).type_table(entry)
    return _finish([header_comment(entry), ""] + page_lines(entry, table))


NAV_BEGIN = "# Generated by `coopgen generate` from cub_headers.lock: the API reference's nav."
NAV_END = "# End of the generated nav."


def emit_nav(mkdocs_yml: str, entries: tuple[LockEntry, ...]) -> str:
    """``mkdocs.yml`` with the lines between the nav markers listing every lock entry."""
    begin, end = mkdocs_yml.find(NAV_BEGIN), mkdocs_yml.find(NAV_END)
    if begin < 0 or end < begin:
        raise ValueError(f"mkdocs.yml: no generated nav block (lines {NAV_BEGIN!r} ... "
                         f"{NAV_END!r} under the API reference)")
    line_start = mkdocs_yml.rfind("\n", 0, begin) + 1
    indent = mkdocs_yml[line_start:begin]
    items = ["- api/index.md", "- Release matrix: api/releases.md",
             "- Supported types: api/types.md"]
    items += [f"- CCCL {e.cccl}: api/{e.cccl}/index.md" for e in entries]
    body = "".join(f"{indent}{item}\n" for item in items)
    return mkdocs_yml[:begin] + NAV_BEGIN + "\n" + body + indent + mkdocs_yml[end:]


# --- docstrings -------------------------------------------------------------------------------

def _types_lines(table: TypeTable, name: str) -> list[str]:
    row = table.row(name)
    return help_lines(row) if row is not None else []


def docstrings(entry: LockEntry, model: ApiModel) -> dict[str, str]:
    """Docstrings keyed by the names users write (``block.BlockScan``,
    ``block.BlockScan.ExclusiveSum``, ``block.sum``): the reference pages' sections, and the
    item types each takes (emit_types)."""
    ctx = DocContext.of(model)
    table = ctx.type_table(entry)
    classes = [c for c in model.classes if c.user_facing] + bound_functions(model)
    out: dict[str, str] = {}
    for cls in classes:
        groups = _method_groups(ctx, cls)
        intro = class_intro_lines(ctx, cls)
        intro += ["## Methods", ""] + [f"- {n}" for n, _ in groups] + [""]
        intro += class_help_lines(table, cls.scope, cls.name)
        out[f"{cls.scope}.{cls.name}"] = _finish(intro)
        for name, overloads in groups:
            key = f"{cls.scope}.{cls.name}.{name}"
            out[key] = _finish(method_lines(ctx, cls, name, overloads)
                               + _types_lines(table, key))
    by_name = {c.name: c for c in classes}
    for row in ctx.pythonic:
        name, scope, methods, select, obj = (row[k] for k in ("name", "scope", "methods",
                                                                "select", "object"))
        cls = by_name[row["cls"]]
        lines = [f"# {scope}.{name}", ""]
        covered: list[Overload] = []
        if obj:
            lines += [f"Makes a `{cls.name}` object; its methods: "
                      + ", ".join(f"`.{a}()` ({cls.name}.{m})" for a, m in methods) + ".", ""]
            covered = [o for o in bound_overloads(ctx, cls) if
                       (obj == "constructor" and o.kind == "constructor") or o.name == obj or
                       o.name in {m for _, m in methods}]
        else:
            lines += [f"Calls `{cls.qualname}::{m}`"
                      + (f' when `{select}="{sel}"`' if select else "") + "." for sel, m in methods]
            lines.append("")
            covered = [o for o in bound_overloads(ctx, cls) if o.kind in ("method", "function") and
                       o.name in {m for _, m in methods} and _matches(o, row)]
        lines += pythonic_call_lines(row) + _types_lines(table, f"{scope}.{name}")
        if cls.template_params or not covered or covered[0].kind != "function":
            lines += ["## Template keywords", ""] + template_rows(model, cls) + [""]
        for ov in covered:
            lines += overload_lines(ctx, cls, ov)
        out[f"{scope}.{name}"] = _finish(lines)
    return out


def emit_docstrings(entry: LockEntry, model: ApiModel) -> str:
    from .emit import header_line

    body = "".join(f"    {k!r}: {v!r},\n" for k, v in docstrings(entry, model).items())
    return (header_line(entry)
            + '"""Docstrings of the classes, methods and Pythonic functions (the API reference\'s '
              'sections)."""\n\n'
            + f"DOCSTRINGS = {{\n{body}}}\n")
