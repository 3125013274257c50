"""Supported-types emitter: which item types each entry point takes, for ``docs/api/types.md``
and the "Types" section of the docstrings ``help()`` shows.

Nothing here is written by hand: every cell asks ``coopgen.resolve.limits.refusal`` (the checks
every call passes: the limits table, the operators' rules) about the entry point's overloads,
as the runtime loads them (each class's emitted module, run), for every dtype of the column:
under the default template arguments, under those a limit on item kinds names, and with each
built-in operator. A call refused whatever the dtype is refused for another reason than its
type, and left out. Like the other emitters it returns text only, in model and table order.
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, replace

from coopgen.resolve.limits import refusal
from coopgen.resolve.operators import BUILTINS, Operator
from coopgen.types.cpp import CPP_OF
from coopgen.types.desc import Field, Scalar, Struct

from .emit import bound_functions, emit_class, limit_specs, load_pythonic, table_methods
from .headers import LockEntry
from .model import ApiModel

#: dtypes issue 18 added, each a column of its own; the others are grouped by kind.
OWN_COLUMNS = ("float16", "bfloat16", "complex64", "complex128")
KIND_COLUMNS = {"int": "integers", "uint": "integers", "float": "float32/float64",
                "bool": "bool", "vector": "vector types"}
#: A numpy record and a numba struct type, as the backend describes them: the last columns.
RECORD = Struct("types table record", 8, 4, (Field("a", Scalar("int32"), 0, 4),
                                             Field("b", Scalar("float32"), 4, 4)),
                record=True, text="a record")
STRUCT = Struct("types table struct", 8, 4, text="a struct")
STRUCT_COLUMNS = (("records", (RECORD,), "numpy structured dtypes"),
                  ("structs", (STRUCT,), "numba extension types with a `StructModel`"))


@functools.lru_cache(maxsize=1)
def columns() -> tuple[tuple[str, tuple], ...]:
    """(label, dtypes) of each column: every dtype coopgen spells (types.cpp.CPP_OF), then
    records and structs."""
    out: dict[str, list] = {}
    for name in CPP_OF:
        label = name if name in OWN_COLUMNS else KIND_COLUMNS[Scalar(name).kind]
        out.setdefault(label, []).append(Scalar(name))
    return tuple((label, tuple(dts)) for label, dts in out.items()) + tuple(
        (label, dts) for label, dts, _ in STRUCT_COLUMNS)


@dataclass(frozen=True)
class Cell:
    """One entry point and one column: why it is refused (empty: supported), and what is
    refused where it is supported (built-in operators, template settings, some overloads)."""
    refused: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Row:
    name: str  # block.sum, block.BlockReduce.Sum
    cells: tuple[Cell, ...]  # in columns() order


@dataclass(frozen=True)
class TypeTable:
    pythonic: tuple[Row, ...]
    faithful: tuple[Row, ...]
    untyped: tuple[str, ...]  # entry points of classes with no item type (digits, counters)

    def row(self, name: str) -> Row | None:
        return next((r for r in self.pythonic + self.faithful if r.name == name), None)


def runtime_classes(entry: LockEntry, model: ApiModel) -> dict:
    """Class name -> its ClassSpec exactly as the runtime imports it. The emitted module is
    run (it holds ClassSpec literals only), so that the table and the runtime read the same
    specs, made by the same code."""
    named = table_methods(load_pythonic(model)[0])
    out = {}
    for cls in model.classes:
        if cls.user_facing:
            scope: dict = {}
            exec(emit_class(entry, cls, model, named.get(cls.name, frozenset())), scope)
            out[cls.name] = scope["SPEC"]
    for cls in bound_functions(model):
        scope = {}
        exec(emit_class(entry, cls, None, named.get(cls.name, frozenset()), function=True), scope)
        out[cls.name] = scope["SPEC"]
    return out


#: refusal()'s answers by (class, what of the overload it reads, limits), then by (dtype index, operators,
#: limit index): what one table asked, the other tables need not, and the lock entries'
#: classes are mostly the same specs.
_ANSWERS: dict = {}


def _asked(cls) -> tuple:
    """What of a class spec refusal() reads (its names and template parameters, not its other
    methods or its text): the same class of two lock entries shares its answers."""
    return cls.name, cls.scope, cls.cpp, cls.template_params


def _asked_of(ov, limits) -> tuple:
    """What of an overload refusal() reads: its name (check_limits' methods, check_operators'
    Sum, Max and Min) and those of its parameters that ``limits`` name (check_limits' params and
    without). Overloads alike in these (most of a method's) share their answers."""
    named = {n for lim in limits for n in lim.params + lim.without}
    return ov.name, tuple(sorted(p.name for p in ov.params if p.name in named))


class _Asker:
    """refusal() for one model, remembered in ``_ANSWERS`` (the Pythonic rows ask about the
    faithful overloads again, the types page about the default entry again, the other lock
    entries about the same classes). Dtypes go by their index in ``every_dtype``; a call's
    template arguments and limits are the defaults and the class's limits, or one limit (by
    its index) and template arguments meeting its conditions."""

    def __init__(self, model: ApiModel):
        self.limits = tuple(limit_specs(model))
        self.every_dtype = tuple(d for _, dtypes in columns() for d in dtypes)
        self.answers: dict = {}  # (class name, overload signature) -> its _ANSWERS dict

    def class_limits(self, cls) -> tuple:
        """The limits on ``cls``: the only ones check_limits reads for it."""
        return tuple(lim for lim in self.limits if lim.cls == cls.name)

    def _answers(self, cls, ov) -> dict:
        key = (cls.name, ov.signature)
        if key not in self.answers:
            limits = self.class_limits(cls)
            self.answers[key] = _ANSWERS.setdefault(
                (_asked(cls), _asked_of(ov, limits), limits), {})
        return self.answers[key]

    def _key(self, d, operators, limit: tuple | None) -> tuple:
        # the limit itself, not its index: another entry's limits may be numbered otherwise
        return d, operators, limit and self.limits[limit[0]]

    def _refusal(self, cls, ov, d: int, operators, limit: tuple | None) -> str | None:
        answers, key = self._answers(cls, ov), self._key(d, operators, limit)
        if key not in answers:
            prim = f"{cls.scope}.{cls.name}.{ov.name}"
            template, limits = (_defaults(cls), self.class_limits(cls)) if limit is None else \
                (limit[1], (self.limits[limit[0]],))
            answers[key] = refusal(prim, cls, ov, self.every_dtype[d], operators, template,
                                   limits)
        return answers[key]

    def _refused_for_every_dtype(self, cls, ov, operators, limit) -> bool:
        answers, key = self._answers(cls, ov), ("every dtype",) + self._key(0, operators, limit)
        if key not in answers:
            answers[key] = all(self._refusal(cls, ov, d, operators, limit)
                               for d in range(len(self.every_dtype)))
        return answers[key]

    def ask(self, cls, ov, d: int, operators=(), limit=None) -> str | None:
        """Why items of dtype ``d`` are refused, without the primitive's name; None where
        they are not, or where every dtype is (a refusal for another reason than the type)."""
        why = self._refusal(cls, ov, d, operators, limit)
        if why is None or self._refused_for_every_dtype(cls, ov, operators, limit):
            return None
        return why.split(": ", 1)[1]

    def overload_cell(self, cls, ov, d: int, fixed: dict) -> Cell:
        """One overload on items of dtype ``d``, with the built-ins ``fixed`` names and a
        decomposer naming a record's fields."""
        ops = tuple(Operator(p.base, p.name, _functor(p.base, fixed[p.name]), None, None, 0)
                    for p in ov.params if p.name in fixed)
        ops += tuple(Operator(p.base, p.name, None, None, None, 0,
                              tuple(f.name for f in RECORD.fields))
                     for p in ov.params if p.base == "DecomposerT")
        builtins = tuple(p for p in ov.params if p.role == "operator" and p.base in BUILTINS
                         and p.name not in fixed)
        # all the cell reads besides the answers (which overloads alike share)
        answers, key = self._answers(cls, ov), ("cell", d, ops,
                                                tuple((p.base, p.name) for p in builtins))
        if key not in answers:
            answers[key] = self._cell(cls, ov, d, ops, builtins)
        return answers[key]

    def _cell(self, cls, ov, d: int, ops, builtins) -> Cell:
        why = self.ask(cls, ov, d, ops)
        if why is not None:
            return Cell(refused=(why,))
        notes = [self.ask(cls, ov, d, ops, limit)
                 for limit in _conditional_limits(cls, ov, self.limits)]
        notes += [self._builtins_note(cls, ov, d, ops, p) for p in builtins]
        return Cell(notes=tuple(n for n in notes if n is not None))

    def _builtins_note(self, cls, ov, d: int, ops, p) -> str | None:
        """The built-ins of parameter ``p`` the items lack, with the first one's reason."""
        refused = {}
        for name, functor in _first_names(p.base).items():
            why = self.ask(cls, ov, d, ops + (Operator(p.base, p.name, functor, None, None, 0),))
            if why is not None:
                refused[name] = why
        if not refused:
            return None
        first = next(iter(refused.values()))
        reason = first.split(" is not defined for ", 1)[1] if " is not defined for " in first \
            else first
        return f"`{p.name}=` {', '.join(repr(n) for n in refused)}: not defined for {reason}"


def _defaults(cls) -> tuple:
    """(TParam, C++ argument) of every template parameter with a default: a plain call's."""
    return tuple((t, t.default) for t in cls.template_params
                 if t.default is not None and t is not cls.value_type)


def _conditional_limits(cls, ov, limits) -> list[tuple[int, tuple]]:
    """(index, template arguments meeting its conditions) of each limit on item kinds that
    holds only for some template arguments."""
    out = []
    for i, lim in enumerate(limits):
        if lim.cls != cls.name or not lim.item_kinds or (lim.methods and ov.name not in
                                                         lim.methods):
            continue
        if not lim.template and not lim.below:
            continue  # unconditional: a plain call meets it
        given = dict(lim.template, **{k: str(least - 1) for k, least in lim.below})
        out.append((i, tuple((t, given.get(t.keyword, t.default)) for t in cls.template_params
                             if t is not cls.value_type
                             and (t.default is not None or t.keyword in given))))
    return out


def _first_names(kind: str) -> dict[str, str]:
    """Each built-in functor of an operator kind under its first name."""
    out: dict[str, str] = {}
    for name, functor in BUILTINS[kind].items():
        if functor not in out.values():
            out[name] = functor
    return out


def _functor(kind: str, name) -> str | None:
    return BUILTINS.get(kind, {}).get(name) if isinstance(name, str) else None


def _merge(cells: list[Cell]) -> Cell:
    """Cells of several overloads or dtypes as one: refused where all are; the refusals of
    some become notes of the rest."""
    refused = tuple(dict.fromkeys(r for c in cells for r in c.refused))
    notes = tuple(dict.fromkeys(n for c in cells for n in c.notes))
    if all(c.refused for c in cells):
        return Cell(refused=refused, notes=notes)
    return Cell(notes=tuple(dict.fromkeys(refused + notes)))


def _in_words(cell: Cell, dtype) -> Cell:
    """The cell with "items of <dtype>" said as "these items", the same for every dtype."""
    names = (["a struct type"] if isinstance(dtype, Struct) else []) + [str(dtype)]
    pattern = re.compile(r"\bitems of (" + "|".join(map(re.escape, names)) + r")(?!\w)")
    say = lambda texts: tuple(dict.fromkeys(  # noqa: E731
        pattern.sub("these items", t).replace("these items is not", "these items are not")
        for t in texts))
    return replace(cell, refused=say(cell.refused), notes=say(cell.notes))


def _row(asker: _Asker, name: str, cls, overloads, fixed: dict) -> Row:
    """The row of ``overloads``; its cells remembered in ``_ANSWERS`` by all they depend on."""
    key = ("row", _asked(cls), tuple(overloads), tuple(sorted(fixed.items())),
           asker.class_limits(cls))
    if key not in _ANSWERS:
        cells, d = [], 0
        for _, dtypes in columns():
            cells.append(_merge([_in_words(_merge([asker.overload_cell(cls, ov, d + i, fixed)
                                                   for ov in overloads]), dt)
                                 for i, dt in enumerate(dtypes)]))
            d += len(dtypes)
        _ANSWERS[key] = tuple(cells)
    return Row(name, _ANSWERS[key])


def _takes_items(cls, ov) -> bool:
    item = cls.value_type.name
    return ov.returns == item or any(re.search(rf"\b{item}\b", p.type) for p in ov.params)


def type_table(entry: LockEntry, model: ApiModel) -> TypeTable:
    """Every entry point's cells: the Pythonic functions, then each class's methods."""
    specs = runtime_classes(entry, model)
    asker = _Asker(model)
    pythonic, untyped = [], []
    for row in load_pythonic(model)[0]:
        cls, name = specs[row["cls"]], f"{row['scope']}.{row['name']}"
        if cls.value_type is None:
            untyped.append(name)
            continue
        wanted = {m for _, m in row["methods"]}
        overloads = [m for m in cls.methods if m.name in wanted and _takes_items(cls, m)
                     and all(n in {p.name for p in m.params} for n in row["needs"])
                     and not any(n in {p.name for p in m.params} for n in row["excludes"])]
        renamed = dict(row["rename"])
        fixed = {cub: v for k, v in row["fixed"] for cub in renamed.get(k, (k,))}
        pythonic.append(_row(asker, name, cls, overloads, fixed))
    faithful = []
    for cls in specs.values():
        for method in cls.method_names:
            name = f"{cls.scope}.{cls.name}.{method}"
            overloads = [m for m in cls.methods if m.name == method]
            if cls.value_type is None:
                untyped.append(name)
            elif any(_takes_items(cls, m) for m in overloads):
                faithful.append(_row(asker, name, cls, [m for m in overloads
                                                        if _takes_items(cls, m)], {}))
    return TypeTable(tuple(pythonic), tuple(faithful), tuple(dict.fromkeys(untyped)))


# --- text -------------------------------------------------------------------------------------

def _names(dtypes) -> str:
    names = [str(d) for d in dtypes]
    return ", ".join(names) if len(names) <= 8 else f"{names[0]} to {names[-1]} ({len(names)})"


def _grouped(row: Row) -> list[tuple[str, Cell]]:
    """(columns, cell) for each distinct cell of a row, in column order."""
    groups: dict[Cell, list[str]] = {}
    for (label, _), cell in zip(columns(), row.cells):
        groups.setdefault(cell, []).append(label)
    return [(", ".join(labels), cell) for cell, labels in groups.items()]


def help_lines(row: Row) -> list[str]:
    """The "Types" section of an entry point's docstring."""
    lines = ["## Types", ""]
    for labels, cell in _grouped(row):
        if cell.refused:
            lines.append(f"- {labels}: refused: {'; '.join(cell.refused)}")
        elif cell.notes:
            lines.append(f"- {labels}: supported, except: {'; '.join(cell.notes)}")
        else:
            lines.append(f"- {labels}: supported")
    return lines + [""]


def class_help_lines(table: TypeTable, scope: str, cls_name: str) -> list[str]:
    """A class's methods by column: yes, no, or "some" (help() of the method says what)."""
    rows = [r for r in table.faithful if r.name.startswith(f"{scope}.{cls_name}.")]
    if not rows:
        return []
    lines = ["## Types", "", "| method | " + " | ".join(label for label, _ in columns()) + " |",
             "|---|" + "---|" * len(columns())]
    word = lambda c: "no" if c.refused else "some" if c.notes else "yes"  # noqa: E731
    lines += [f"| {r.name.rsplit('.', 1)[1]} | " + " | ".join(map(word, r.cells)) + " |"
              for r in rows]
    return lines + ["", "*some*: supported, with exceptions the method's help() names.", ""]


def page_lines(entry: LockEntry, table: TypeTable) -> list[str]:
    """``docs/api/types.md`` below its header: the columns, both surfaces' tables, the notes."""
    labels = [label for label, _ in columns()]
    notes: dict[str, int] = {}

    def cell_text(cell: Cell) -> str:
        refs = [notes.setdefault(t, len(notes) + 1) for t in cell.refused + cell.notes]
        links = ", ".join(f"[{n}](#note-{n})" for n in refs)
        return ("no" if cell.refused else "yes") + (f" {links}" if links else "")

    def table_lines(head: str, rows: tuple[Row, ...]) -> list[str]:
        out = [f"| {head} | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        return out + [f"| `{r.name}` | " + " | ".join(map(cell_text, r.cells)) + " |"
                      for r in rows] + [""]

    lines = ["# Supported types", "",
             f"The item types each primitive takes in CCCL {entry.cccl}, the default release "
             "(`help()` of a primitive shows its own release's). Generated with the bindings "
             "from the model and the checks the runtime makes of every call: the limits table "
             "(`generator/data/limits.toml`) and the operators' rules (`UNDEFINED` in "
             "`coopgen.resolve.operators`). A refused type is a compile-time error naming the "
             "primitive and the reason; a *yes* with notes is supported except where they say "
             "(built-in operators the items lack, template settings, some overloads).", "",
             "| column | dtypes |", "|---|---|"]
    described = {label: text for label, _, text in STRUCT_COLUMNS}
    lines += [f"| {label} | {described.get(label) or _names(dtypes)} |"
              for label, dtypes in columns()] + [""]
    lines += ["## Pythonic functions", ""] + table_lines("function", table.pythonic)
    lines += ["## Classes", ""] + table_lines("method", table.faithful)
    if table.untyped:
        lines += ["Not listed, having no item type of their own (unsigned digits or "
                  "counters): " + ", ".join(f"`{n}`" for n in table.untyped) + ".", ""]
    lines += ["## Notes", ""]
    lines += [f"{n}. <a id=\"note-{n}\"></a>{text.replace('|', chr(92) + '|')}"
              for text, n in notes.items()]
    return lines + [""]
