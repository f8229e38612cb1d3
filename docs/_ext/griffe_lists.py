"""Griffe extensions for the API reference (loaded by mkdocs.yml; the library is unchanged).

- `ListsAfterLeadIn`: jaxmb's docstrings put a Markdown list directly under its lead-in line
  (`**Arguments:**`), which reads best in `help()`; Python-Markdown only starts a list after a
  blank line, so the items would run together. The blank line is inserted here.
- `EquinoxSignatures`: an equinox Module is a dataclass whose `__init__` is generated from its
  annotated fields, which static analysis does not see; this builds that signature (fields in
  definition order, base classes first, defaults from `= value` or `eqx.field(default=...)`,
  class variables and `eqx.AbstractVar` skipped), so `Revolute(name, i, j, s_i, s_j)` is shown.
"""

import re

import griffe

_ITEM = re.compile(r"\s*([-*+]|\d+\.)\s")
_FENCE = re.compile(r"\s*(```|~~~)")
_ABSTRACT = re.compile(r"((eqx|equinox)\.)?Abstract(Class)?Var\[")


def separate_lists(text: str) -> str:
    """`text` with a blank line before every list item that directly follows a non-list line."""
    out, in_fence, in_list = [], False, False
    for line in text.splitlines():
        if _FENCE.match(line):
            in_fence = not in_fence
        elif not in_fence and _ITEM.match(line):
            if not in_list and out and out[-1].strip():
                out.append("")
            in_list = True
        elif not line.strip():
            in_list = False  # a blank line ends the list (or it needs none before the next item)
        out.append(line)
    return "\n".join(out)


class ListsAfterLeadIn(griffe.Extension):
    """Apply `separate_lists` to every docstring griffe loads."""

    def on_instance(self, *, obj, **kwargs):
        if obj.docstring is not None:
            obj.docstring.value = separate_lists(obj.docstring.value)


def _base_classes(cls):
    """The base classes of `cls` that griffe loaded (external ones are skipped)."""
    for base in cls.bases:
        try:
            target = cls.modules_collection[getattr(base, "canonical_path", str(base))]
        except KeyError:
            continue
        if isinstance(target, griffe.Alias):
            target = target.final_target
        if isinstance(target, griffe.Class):
            yield target


def _is_equinox_module(cls) -> bool:
    paths = {getattr(b, "canonical_path", str(b)) for b in cls.bases}
    return "equinox.Module" in paths or any(_is_equinox_module(b) for b in _base_classes(cls))


def _field_parameters(cls):
    """The dataclass parameters that `cls` itself declares, with their defaults."""
    for member in cls.members.values():
        if member.is_alias or not member.is_attribute or member.annotation is None:
            continue
        if "instance-attribute" not in member.labels or _ABSTRACT.match(str(member.annotation)):
            continue  # ClassVar, or eqx.AbstractVar / AbstractClassVar declared for subclasses
        default = member.value
        if isinstance(default, griffe.ExprCall) and str(default.function).endswith("field"):
            keywords = {a.name: a.value for a in default.arguments
                        if isinstance(a, griffe.ExprKeyword)}
            if keywords.get("init") == "False":
                continue
            default = keywords.get("default")
        yield griffe.Parameter(member.name, annotation=member.annotation,
                               kind=griffe.ParameterKind.positional_or_keyword, default=default)


def _init_parameters(cls):
    """Fields of `cls` and its loaded equinox bases, root first; a redefinition keeps its slot."""
    params = {}
    for base in _base_classes(cls):
        if _is_equinox_module(base):
            params.update({p.name: p for p in _init_parameters(base)})
    own = {p.name: p for p in _field_parameters(cls)}
    for name in set(params) & (set(cls.members) - set(own)):
        del params[name]  # redeclared as a class variable or property
    params.update(own)
    return list(params.values())


def _classes(obj):
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_class:
            yield member
        if member.is_module or member.is_class:
            yield from _classes(member)


class EquinoxSignatures(griffe.Extension):
    """Give each concrete equinox Module without its own `__init__` the generated signature."""

    def on_package(self, *, pkg, **kwargs):
        for cls in _classes(pkg):
            if "__init__" in cls.all_members or cls.name.startswith("Abstract"):
                continue
            if not _is_equinox_module(cls):
                continue
            self_param = griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)
            init = griffe.Function("__init__", lineno=0, endlineno=0, parent=cls,
                                   parameters=griffe.Parameters(self_param, *_init_parameters(cls)),
                                   returns="None")
            cls.set_member("__init__", init)
