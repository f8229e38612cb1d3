"""Griffe extensions for the API reference (loaded by mkdocs.yml; the library is unchanged).

- `ListsAfterLeadIn`: jaxmb's docstrings put a Markdown list directly under its lead-in line
  (`**Arguments:**`), which reads best in `help()`; Python-Markdown only starts a list after a
  blank line, so the items would run together. The blank line is inserted here.
- `EquinoxSignatures`: an equinox Module is a dataclass whose `__init__` is generated from its
  annotated fields, which static analysis does not see; this builds that signature (fields in
  definition order, base classes first, defaults from `= value` or `eqx.field(default=...)`,
  class variables and `eqx.AbstractVar` skipped), so `Revolute(name, i, j, s_i, s_j)` is shown;
  a `typing.NamedTuple` gets its generated signature the same way (`ModelFile`).
- `ParameterTables`: every function, method and class with parameters gets a parameter table
  (name, type and default from the signature); the items of its `**Arguments:**` list
  (`- `name`: description`, or `- `a`, `b`: description` for several) fill the descriptions
  and leave the prose, and `**Returns:** text` becomes a returns table with the return
  annotation. An `**Arguments:**` block that is not such a list stays prose (tests/test_docs.py
  checks that the public API has none). Names of private objects in signatures are shown
  as plain names, so the site names no private path; annotations written with jaxmb's aliases
  (`jaxmb._custom_types`: `Coordinates`, `ScalarLike`, ...) show what they stand for.
- `ShapeStrings`: griffe reads a string inside an annotation as a forward reference and
  parses it, so the jaxtyping shape of `Float[Array, "2"]` would show as `Float[Array, 2]`
  (and `"n"` as a name `n`); the shape strings of jaxtyping types are shown as written.
"""

import ast
import dataclasses
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
            keywords = {
                a.name: a.value for a in default.arguments if isinstance(a, griffe.ExprKeyword)
            }
            if keywords.get("init") == "False":
                continue
            default = keywords.get("default")
        yield griffe.Parameter(
            member.name,
            annotation=member.annotation,
            kind=griffe.ParameterKind.positional_or_keyword,
            default=default,
        )


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


def _is_named_tuple(cls) -> bool:
    paths = {getattr(b, "canonical_path", str(b)) for b in cls.bases}
    return bool(paths & {"typing.NamedTuple", "typing_extensions.NamedTuple"})


def _classes(obj):
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_class:
            yield member
        if member.is_module or member.is_class:
            yield from _classes(member)


class EquinoxSignatures(griffe.Extension):
    """Give each concrete equinox Module (and each NamedTuple) without its own `__init__` the
    generated signature."""

    def on_package(self, *, pkg, **kwargs):
        for cls in _classes(pkg):
            if "__init__" in cls.all_members or cls.name.startswith("Abstract"):
                continue
            if not (_is_equinox_module(cls) or _is_named_tuple(cls)):
                continue
            self_param = griffe.Parameter("self", kind=griffe.ParameterKind.positional_or_keyword)
            init = griffe.Function(
                "__init__",
                lineno=0,
                endlineno=0,
                parent=cls,
                parameters=griffe.Parameters(self_param, *_init_parameters(cls)),
                returns="None",
            )
            cls.set_member("__init__", init)


_LEAD = re.compile(r"^\*\*(Arguments|Returns):\*\*[ \t]*(.*)$")
_NAMES = re.compile(r"`(\*{0,2}\w+)`((?:\s*(?:,|/|and|or)\s*`\*{0,2}\w+`)*)")
_FENCE_BLOCK = re.compile(r"\n*```.*?```\s*\Z", re.S)


def _closing_paren(text: str, start: int) -> int:
    """Index of the parenthesis closing the one at text[start], or -1."""
    depth = 0
    for k in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[k], 0)
        if depth == 0:
            return k
    return -1


def parse_item(item: str) -> tuple[list[str], str] | None:
    """(names, description) of an argument list item "`a`, `b` (qualifier): text", or None
    when the item does not start with backticked names followed by `:` (or a parenthesized
    qualifier and `:`, kept at the front of the description)."""
    match = _NAMES.match(item)
    if match is None:
        return None
    names = re.findall(r"`(\*{0,2}\w+)`", match.group(0))
    rest = item[match.end() :].lstrip()
    qualifier = ""
    if rest.startswith("("):
        end = _closing_paren(rest, 0)
        if end < 0:
            return None
        qualifier, rest = rest[: end + 1], rest[end + 1 :].lstrip()
    if not rest.startswith(":"):
        return None
    description = " ".join(part for part in (qualifier, rest[1:].strip()) if part)
    return names, description.rstrip(";").rstrip()


def _list_items(lines: list[str]) -> list[str]:
    """The items of a Markdown list given as lines (continuations joined), or [] if the lines
    are not one list."""
    items = []
    for line in lines:
        if re.match(r"[-*+] ", line):
            items.append(line[2:].strip())
        elif items and line.startswith(" ") and line.strip():
            items[-1] += " " + line.strip()
        else:
            return []
    return items


def split_docstring(text: str) -> dict:
    """The `**Arguments:**` list (items), the `**Returns:**` paragraph and the prose around
    them: {"before", "items", "between", "returns", "after"}; "items" is None where there is
    no `**Arguments:**` list (an inline one stays in the prose)."""
    lines = text.splitlines()
    parts = {"before": [], "items": None, "between": [], "returns": None, "after": []}
    where = "before"
    k = 0
    while k < len(lines):
        lead = _LEAD.match(lines[k])
        if (
            lead
            and lead.group(1) == "Arguments"
            and not lead.group(2)
            and parts["items"] is None
            and where == "before"
        ):
            end = k + 1
            while end < len(lines) and not lines[end].strip():
                end += 1
            start = end
            while end < len(lines) and (
                re.match(r"[-*+] ", lines[end])
                or (lines[end].startswith(" ") and lines[end].strip())
            ):
                end += 1
            items = _list_items(lines[start:end])
            if items:
                parts["items"], where, k = items, "between", end
                continue
        if lead and lead.group(1) == "Returns" and parts["returns"] is None:
            end = k + 1
            while end < len(lines) and lines[end].strip() and not _LEAD.match(lines[end]):
                end += 1
            parts["returns"] = " ".join([lead.group(2)] + [x.strip() for x in lines[k + 1 : end]])
            where, k = "after", end
            continue
        parts[where].append(lines[k])
        k += 1
    for key in ("before", "between", "after"):
        parts[key] = "\n".join(parts[key]).strip("\n")
    return parts


def _signature(obj):
    """The parameters a reader passes: a function's, or a class's `__init__` (self left out)."""
    function = obj
    if obj.is_class:
        function = obj.all_members.get("__init__")
        if function is None or function.is_alias:
            try:
                function = function.final_target if function is not None else None
            except Exception:  # an external base: no signature to show
                return []
    if function is None or not function.is_function:
        return []
    params = list(function.parameters)
    if params and params[0].name in ("self", "cls") and (obj.is_class or obj.parent.is_class):
        params = params[1:]
    star = {griffe.ParameterKind.var_positional: "*", griffe.ParameterKind.var_keyword: "**"}
    return [(star.get(p.kind, "") + p.name, p) for p in params]


def parameter_sections(obj) -> list | None:
    """The parsed docstring sections of `obj`, with the parameter and returns tables; None
    where `obj` has no docstring or nothing to tabulate."""
    if obj.docstring is None or "property" in obj.labels:
        return None
    own_init = obj.members.get("__init__") if obj.is_class else None
    if own_init is not None and not own_init.is_alias and own_init.docstring is not None:
        return None  # merged into the class's page: the `__init__` docstring has the table
    signature = _signature(obj) if (obj.is_function or obj.is_class) else []
    parts = split_docstring(obj.docstring.value)
    described = {}
    prose_items = None
    for item in parts["items"] or []:
        parsed = parse_item(item)
        known = {name for name, _ in signature}
        if parsed is None or not set(parsed[0]) <= known:
            prose_items = parts["items"]  # not a parameter list: keep it as written
            described = {}
            break
        for name in parsed[0]:
            described.setdefault(name, parsed[1])
    if not signature and parts["returns"] is None:
        return None
    sections = []
    before = parts["before"]
    if prose_items is not None:
        before += "\n\n**Arguments:**\n\n" + "\n".join(f"- {i}" for i in prose_items)
    trailer = ""
    if parts["returns"] is None and not parts["between"] and not parts["after"]:
        fence = _FENCE_BLOCK.search(before)  # the table goes above a closing example
        if fence:
            before, trailer = before[: fence.start()], fence.group(0).strip("\n")
    if before:
        sections.append(griffe.DocstringSectionText(before))
    if signature:
        sections.append(
            griffe.DocstringSectionParameters(
                [
                    griffe.DocstringParameter(
                        name,
                        description=described.get(name, ""),
                        annotation=p.annotation,
                        value=p.default,
                    )
                    for name, p in signature
                ]
            )
        )
    if parts["between"]:
        sections.append(griffe.DocstringSectionText(parts["between"]))
    if parts["returns"] is not None:
        returns = obj.returns if obj.is_function else None
        sections.append(
            griffe.DocstringSectionReturns(
                [griffe.DocstringReturn("", description=parts["returns"], annotation=returns)]
            )
        )
    for text in (parts["after"], trailer):
        if text:
            sections.append(griffe.DocstringSectionText(text))
    return sections


def _objects(obj):
    for member in obj.members.values():
        if member.is_alias:
            continue
        if member.is_function or member.is_class:
            yield member
        if member.is_module or member.is_class:
            yield from _objects(member)


def _is_private(path: str) -> bool:
    return any(part.startswith("_") for part in path.split("."))


def _public_targets(pkg) -> set[str]:
    """The paths of the objects that the package's public names stand for (`jaxmb.Model` for
    `jaxmb._model.model.Model`): the site documents them under the public name."""
    targets, todo = set(), [pkg]
    while todo:
        module = todo.pop()
        for name, member in module.members.items():
            if name.startswith("_"):
                continue
            if member.is_alias:
                try:
                    targets.add(member.final_target.path)
                except (griffe.AliasResolutionError, griffe.CyclicAliasError):
                    pass
            elif member.is_module:
                todo.append(member)
    return targets


def _expressions(obj):
    """The annotations and defaults of `obj`'s signature, or its annotation and value."""
    if obj.is_function:
        for p in obj.parameters:
            yield p.annotation
            yield p.default
        yield obj.returns
    elif obj.is_attribute:
        yield obj.annotation
        yield obj.value


def detach_private_names(pkg) -> None:
    """A name in a signature whose object is private and not documented under a public name
    (`Problem`, `RANK_RTOL`) is shown as a plain name: without this its cross-reference, left
    unresolved, would carry the private path (`jaxmb._formulations.problem.Problem`)."""
    public = _public_targets(pkg)
    todo = [pkg]
    while todo:
        obj = todo.pop()
        for member in obj.members.values():
            if member.is_alias:
                continue
            if member.is_module or member.is_class:
                todo.append(member)
            for expr in _expressions(member):
                if not isinstance(expr, griffe.Expr):
                    continue
                for name in expr.iterate(flat=True):
                    if not isinstance(name, griffe.ExprName) or name.parent is None:
                        continue
                    try:
                        path = name.canonical_path
                    except Exception:  # unresolvable: left as it is
                        continue
                    if path.startswith(pkg.name + ".") and _is_private(path) and path not in public:
                        name.parent = None


def _expanded(expr, aliases):
    """`expr` with every name of `aliases` (canonical path -> expression) replaced by its
    expression; `aliases` None: with every name plain (no parent to resolve it in)."""
    if isinstance(expr, griffe.ExprName):
        if aliases is None:
            return dataclasses.replace(expr, parent=None)
        try:
            return aliases.get(expr.canonical_path, expr)
        except Exception:  # unresolvable: left as it is
            return expr
    if isinstance(expr, list):
        return [_expanded(e, aliases) for e in expr]
    if not (isinstance(expr, griffe.Expr) and dataclasses.is_dataclass(expr)):
        return expr
    changes = {
        f.name: _expanded(getattr(expr, f.name), aliases)
        for f in dataclasses.fields(expr)
        if f.init
    }
    return dataclasses.replace(expr, **changes)


def expand_type_aliases(pkg, module="_custom_types") -> None:
    """Annotations written with the aliases of `jaxmb._custom_types` show the jaxtyping
    annotation each stands for (`ScalarLike` as `Real[ArrayLike, '']`): the module is private,
    what the aliases mean is not."""
    source = pkg.members.get(module)
    if source is None:
        return
    aliases = {
        member.path: _expanded(member.value, None)  # names resolve in the alias's module only
        for member in source.members.values()
        if not member.is_alias and member.is_attribute and isinstance(member.value, griffe.Expr)
    }
    todo = [pkg]
    while todo:
        obj = todo.pop()
        for member in obj.members.values():
            if member.is_alias or member.path.startswith(source.path + "."):
                continue
            if member.is_module or member.is_class:
                todo.append(member)
            elif member.is_function:
                for p in member.parameters:
                    p.annotation = _expanded(p.annotation, aliases)
                member.returns = _expanded(member.returns, aliases)
            elif member.is_attribute:
                member.annotation = _expanded(member.annotation, aliases)


class ParameterTables(griffe.Extension):
    """Give every function and class its parameter (and returns) table: the parsed sections
    are set once, after `EquinoxSignatures` has given equinox Modules their `__init__`; and
    show names of private objects in signatures as plain names (`detach_private_names`)."""

    def on_package(self, *, pkg, **kwargs):
        expand_type_aliases(pkg)
        for obj in _objects(pkg):
            sections = parameter_sections(obj)
            if sections is not None:
                obj.docstring.__dict__["parsed"] = sections  # the cached `Docstring.parsed`
        detach_private_names(pkg)


def _is_jaxtyping(expr) -> bool:
    """Whether `expr` names a jaxtyping object (`Float`, `Real`, ...)."""
    if not isinstance(expr, (griffe.ExprName, griffe.ExprAttribute)):
        return False
    try:
        return expr.canonical_path.split(".")[0] == "jaxtyping"
    except Exception:  # unresolvable: not one
        return False


def keep_shape_strings(expr, node, code: str):
    """`expr` (griffe's annotation built from the AST `node`) with each string constant in
    the brackets of a jaxtyping type replaced by its source text (`"2"`, quotes included);
    the two trees are walked side by side, and a part where they differ is left as it is."""
    if isinstance(node, ast.Subscript) and isinstance(expr, griffe.ExprSubscript):
        expr.left = keep_shape_strings(expr.left, node.value, code)
        if isinstance(node.slice, ast.Tuple) and isinstance(expr.slice, griffe.ExprTuple):
            pairs = zip(expr.slice.elements, node.slice.elts)
            if len(expr.slice.elements) == len(node.slice.elts):
                shapes = _is_jaxtyping(expr.left)
                expr.slice.elements = [
                    _shape_text(n, code)
                    if shapes and _is_string(n)
                    else keep_shape_strings(e, n, code)
                    for e, n in pairs
                ]
        elif _is_jaxtyping(expr.left) and _is_string(node.slice):
            expr.slice = _shape_text(node.slice, code)
        else:
            expr.slice = keep_shape_strings(expr.slice, node.slice, code)
    elif isinstance(node, ast.BinOp) and isinstance(expr, griffe.ExprBinOp):
        expr.left = keep_shape_strings(expr.left, node.left, code)
        expr.right = keep_shape_strings(expr.right, node.right, code)
    elif isinstance(node, (ast.Tuple, ast.List)) and isinstance(
        expr, (griffe.ExprTuple, griffe.ExprList)
    ):
        if len(expr.elements) == len(node.elts):
            expr.elements = [
                keep_shape_strings(e, n, code) for e, n in zip(expr.elements, node.elts)
            ]
    return expr


def _is_string(node) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _shape_text(node, code: str) -> str:
    return ast.get_source_segment(code, node) or repr(node.value)


class ShapeStrings(griffe.Extension):
    """Apply `keep_shape_strings` to the annotations of every function (parameters and
    return) and attribute griffe visits (equinox fields included), and to the values of
    attributes (the type aliases of `jaxmb._custom_types`)."""

    def on_function_instance(self, *, node, func, agent, **kwargs):
        code = getattr(agent, "code", None)
        if code is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            return  # dynamic analysis: no source
        args = node.args
        nodes = [*args.posonlyargs, *args.args, args.vararg, *args.kwonlyargs, args.kwarg]
        for arg in nodes:
            if arg is not None and arg.annotation is not None and arg.arg in func.parameters:
                p = func.parameters[arg.arg]
                p.annotation = keep_shape_strings(p.annotation, arg.annotation, code)
        if node.returns is not None:
            func.returns = keep_shape_strings(func.returns, node.returns, code)

    def on_attribute_instance(self, *, node, attr, agent, **kwargs):
        code = getattr(agent, "code", None)
        annotation = getattr(node, "annotation", None) or getattr(node, "returns", None)
        if code is not None and annotation is not None and attr.annotation is not None:
            attr.annotation = keep_shape_strings(attr.annotation, annotation, code)
        value = getattr(node, "value", None)  # a type alias: `Scalar = Float[Array, ""]`
        if code is not None and value is not None and isinstance(attr.value, griffe.Expr):
            attr.value = keep_shape_strings(attr.value, value, code)
