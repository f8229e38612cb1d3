"""The documentation site (mkdocs.yml, docs/) builds with `mkdocs build --strict`, so a broken
cross-reference, a missing page or a docstring that no longer resolves fails the tests; every
public name of jaxmb has an entry in the API reference; the code in the pages refers only to
names jaxmb has; the signatures the reference shows for equinox Modules are their real ones."""

import ast
import html as html_lib
import importlib
import importlib.util
import inspect
import os
import pkgutil
import re
import subprocess
import sys

import equinox as eqx
import pytest

import jaxmb
import jaxmb.models

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
EXTENSION = os.path.join(DOCS, "_ext", "griffe_lists.py")
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def mkdocs_build(config, site):
    """(exit code, output) of `mkdocs build --strict`, run in the repository root."""
    pytest.importorskip("mkdocs", reason="the docs extra is part of the test extra")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config, "-d", site],
        cwd=ROOT,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )
    return run.returncode, run.stdout + run.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    code, output = mkdocs_build(os.path.join(ROOT, "mkdocs.yml"), str(site))
    assert code == 0, output
    return site


def load_extension():
    spec = importlib.util.spec_from_file_location("jaxmb_docs_griffe_lists", EXTENSION)
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    return ext


def public_names():
    """The names jaxmb/__init__.py re-exports (`from .x import y as y`; modules `mb.batch` and
    `mb.drive` included), read from the source: vars(jaxmb) would also list any submodule
    another test imported."""
    with open(os.path.join(ROOT, "jaxmb", "__init__.py")) as f:
        tree = ast.parse(f.read())
    return sorted(
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
        if not (alias.asname or alias.name).startswith("_")
    )


def documented_identifiers():
    """Every `::: identifier` directive of the API reference pages."""
    found = set()
    for name in os.listdir(os.path.join(DOCS, "api")):
        with open(os.path.join(DOCS, "api", name)) as f:
            found |= set(re.findall(r"^::: (\S+)", f.read(), flags=re.M))
    return found


def test_site_builds_strict_with_every_public_name(site):
    """The strict build passed (fixture); each public name has its own anchor in the rendered
    reference."""
    html = "".join(
        open(os.path.join(d, f)).read()
        for d, _, files in os.walk(site / "api")
        for f in files
        if f.endswith(".html")
    )
    missing = [n for n in public_names() if f'id="jaxmb.{n}"' not in html]
    assert missing == []
    for page in ("notebooks/01_getting_started", "model_files", "concepts/solvability", "cli"):
        assert (site / page / "index.html").is_file(), page


def test_api_reference_lists_every_public_name():
    """A name added to jaxmb/__init__.py needs a `::: jaxmb.NAME` entry in docs/api/."""
    documented = documented_identifiers()
    assert [n for n in public_names() if f"jaxmb.{n}" not in documented] == []
    assert len(public_names()) > 30  # the check above is not vacuous


def test_broken_reference_fails_the_strict_build(tmp_path):
    """What the docs build guards against: a reference to a name that does not exist aborts
    the strict build and the message names it (same theme and handler settings as the site)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "index.md").write_text(
        "# Page\n\nSee [simulate][jaxmb.simulate] and [this][jaxmb.no_such_name].\n\n"
        "::: jaxmb.simulate\n"
    )
    (tmp_path / "mkdocs.yml").write_text(
        f"INHERIT: {os.path.join(ROOT, 'mkdocs.yml')}\ndocs_dir: docs\nnav: [index.md]\n"
        "plugins:\n  - mkdocstrings:\n      handlers:\n        python:\n"
        f"          paths: [{ROOT}]\n"
        f"          options: {{docstring_style: null, extensions: [{EXTENSION}]}}\n"
    )
    code, output = mkdocs_build(str(tmp_path / "mkdocs.yml"), str(tmp_path / "site"))
    assert code != 0
    warnings = [line for line in output.splitlines() if "WARNING" in line]
    assert len(warnings) == 1 and "jaxmb.no_such_name" in warnings[0], output


def python_blocks():
    """(page, code) of every ```python block of the pages."""
    for d, _, files in os.walk(DOCS):
        for f in sorted(files):
            if f.endswith(".md"):
                text = open(os.path.join(d, f)).read()
                for code in re.findall(r"^```python\n(.*?)^```", text, flags=re.M | re.S):
                    yield os.path.relpath(os.path.join(d, f), DOCS), code


def test_code_in_the_pages_uses_existing_names():
    """Every Python block of the pages is valid Python and every `mb.NAME` (and
    `mb.drive.NAME`) it uses exists, so a renamed function cannot leave the pages behind."""
    blocks = list(python_blocks())
    assert len(blocks) >= 10
    missing = []
    for page, code in blocks:
        tree = ast.parse(code, filename=page)  # raises on a syntax error
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "mb"
                and not hasattr(jaxmb, node.attr)
            ):
                missing.append((page, f"mb.{node.attr}"))
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Attribute)
                and isinstance(node.value.value, ast.Name)
                and node.value.value.id == "mb"
                and node.value.attr == "drive"
                and not hasattr(jaxmb.drive, node.attr)
            ):
                missing.append((page, f"mb.drive.{node.attr}"))
    assert missing == []


def test_equinox_signatures_match_the_real_ones():
    """The griffe extension reconstructs each equinox Module's generated `__init__` from its
    fields by static analysis; compare with `inspect.signature` of the imported class: same
    parameter names in the same order, same defaults."""
    griffe = pytest.importorskip("griffe")
    ext = load_extension()
    package = griffe.load(
        "jaxmb", search_paths=[ROOT], extensions=griffe.load_extensions(ext.EquinoxSignatures())
    )
    checked = 0
    for name in public_names():
        cls = getattr(jaxmb, name)
        if not (inspect.isclass(cls) and issubclass(cls, eqx.Module)) or name.startswith(
            "Abstract"
        ):  # never instantiated: no generated __init__
            continue
        real = inspect.signature(cls).parameters.values()
        init = package[name].all_members.get("__init__")
        shown = list(init.parameters)[1:]  # without self
        assert [p.name for p in shown] == [p.name for p in real], name
        for p_shown, p_real in zip(shown, real):
            where = (name, p_real.name)
            assert (p_shown.default is None) == (p_real.default is p_real.empty), where
            if p_real.default is not p_real.empty:
                try:
                    shown_default = ast.literal_eval(str(p_shown.default))
                except ValueError:  # a module-level name (Model's kind: PLANAR)
                    shown_default = vars(sys.modules[cls.__module__])[str(p_shown.default)]
                assert shown_default == p_real.default, where
        checked += 1
    assert checked >= 20


def test_separate_lists_inserts_blank_lines_only_where_needed():
    """A list right under its lead-in line gets a blank line before its first item only;
    fenced code is untouched (hand-written cases)."""
    ext = load_extension()
    text = "**Arguments:**\n- `a`: one,\n  continued.\n- `b`: two.\n\nText.\n```\nx\n- y\n```"
    want = "**Arguments:**\n\n- `a`: one,\n  continued.\n- `b`: two.\n\nText.\n```\nx\n- y\n```"
    assert ext.separate_lists(text) == want
    assert ext.separate_lists(want) == want


def page_html(site, page):
    return (site / page / "index.html").read_text(encoding="utf-8")


def text_of(fragment, tag=" "):
    """The visible text of an HTML fragment, its tags replaced by `tag`, whitespace collapsed."""
    return " ".join(html_lib.unescape(re.sub(r"<[^>]+>", tag, fragment)).split())


def parameter_rows(html, identifier):
    """{name: (type, description, default)} of the parameter table of the object whose heading
    has id `identifier`, read from the rendered page (rows in order)."""
    section = heading_section(html, identifier)
    table = section[section.index("Parameters:") :]
    table = table[: table.index("</table>")]
    rows = {}
    for row in re.findall(r'<tr class="doc-section-item">(.*?)</tr>', table, flags=re.S):
        name, kind, description, default = (
            text_of(c, "") for c in re.findall(r"<td>(.*?)</td>", row, flags=re.S)
        )
        rows[name] = (kind, description, default)
    return rows


def test_parameter_tables_give_name_type_description_and_default(site):
    """Each parameter of a function or class has a table row: its type and default from the
    signature, its description from the docstring's `**Arguments:**` list (which then is not
    repeated as prose). simulate: every parameter in signature order; rtol and atol share one
    item; a class (Bushing) gets its fields with units; an equinox Module without an
    `**Arguments:**` list (Revolute) still gets names and types."""
    html = page_html(site, "api/simulation")
    rows = parameter_rows(html, "jaxmb.simulate")
    assert list(rows) == list(inspect.signature(jaxmb.simulate).parameters)
    described = "error tolerances of the adaptive step-size controller (positive)."
    assert rows["rtol"] == ('Real[ArrayLike, ""]', described, "1e-08")
    assert rows["atol"] == ('Real[ArrayLike, ""]', described, "1e-10")
    assert rows["model"] == ("Model", "a built Model.", "required")
    assert rows["max_steps"][0::2] == ("int", "200000")
    assert all(description for _, description, _ in rows.values())  # every one documented
    simulate = html[html.index('id="jaxmb.simulate"') : html.index('id="jaxmb.Trajectory"')]
    assert "Arguments:" not in text_of(simulate)  # the list became the table
    assert "Returns:" in text_of(simulate) and "Trajectory" in text_of(simulate)

    elements = page_html(site, "api/elements")
    bushing = parameter_rows(elements, "jaxmb.Bushing")
    assert list(bushing) == ["name", "i", "j", "s_i", "s_j", "stiffness", "damping", "free_angle"]
    assert bushing["stiffness"][1] == "(kx, ky, kphi) in N/m, N/m, N m/rad."
    assert bushing["damping"][2] == "(0.0, 0.0, 0.0)"
    revolute = parameter_rows(elements, "jaxmb.Revolute")
    assert {name: kind for name, (kind, _, _) in revolute.items()} == {
        "name": "str",
        "i": "Body",
        "j": "Body",
        "s_i": 'Float[Array, "2"]',
        "s_j": 'Float[Array, "2"]',
    }
    heading = elements.index('id="jaxmb.Revolute"')
    signature = text_of(elements[heading : elements.index("Parameters:", heading)], "")
    assert 's_i: Float[Array, "2"], s_j: Float[Array, "2"]' in signature  # quotes kept


def test_shape_strings_keep_their_quotes():
    """griffe parses a string in an annotation as a forward reference (`"2"` becomes the number
    2, `"n"` a name); the extension keeps the shape strings of jaxtyping types as written and
    leaves forward references and `Literal` strings as griffe reads them (hand-written)."""
    griffe = pytest.importorskip("griffe")
    ext = load_extension()
    code = (
        "from typing import Literal\n"
        "from jaxtyping import Array, Float, Real\n"
        'def f(x: Float[Array, "2"], y: tuple[Real[Array, "n"], int] | None, '
        'z: Literal[\'a\'], w: "Model", *v: Float[Array, ""]) -> Float[Array, " n"]: ...\n'
        "class C:\n"
        '    s: Float[Array, "3"]\n'
    )
    extensions = griffe.load_extensions(ext.ShapeStrings())
    with griffe.temporary_visited_module(code, extensions=extensions) as module:
        f = module["f"]
        assert [str(p.annotation) for p in f.parameters] == [
            'Float[Array, "2"]',
            'tuple[Real[Array, "n"], int] | None',
            "Literal['a']",
            "Model",
            'Float[Array, ""]',
        ]
        assert str(f.returns) == 'Float[Array, " n"]'
        assert str(module["C.s"].annotation) == 'Float[Array, "3"]'


def test_argument_lists_of_the_public_api_become_tables():
    """Every `**Arguments:**` block of a function or class the reference shows is a list whose
    items start with the names of its parameters (`- `a`, `b`: text`), so the extension can
    turn it into the parameter table: a prose block, or an item naming no parameter (a typo, a
    renamed argument) stays prose on the site, and fails here naming the object."""
    griffe = pytest.importorskip("griffe")
    ext = load_extension()
    package = griffe.load(
        "jaxmb",
        search_paths=[ROOT],
        extensions=griffe.load_extensions(ext.ListsAfterLeadIn(), ext.EquinoxSignatures()),
    )
    seen, problems, lists = set(), [], 0

    def walk(obj):
        obj = obj.final_target if obj.is_alias else obj
        if obj.path in seen:
            return
        seen.add(obj.path)
        if (obj.is_function or obj.is_class) and obj.docstring is not None:
            check(obj)
        if obj.is_module or obj.is_class:
            for name, member in obj.members.items():
                if not name.startswith("_") and not (obj.is_module and member.is_alias):
                    walk(member)

    def check(obj):
        nonlocal lists
        text = obj.docstring.value
        if re.search(r"^\*\*Arguments:\*\*[ \t]*\S", text, flags=re.M):
            problems.append((obj.path, "prose after **Arguments:**"))
            return
        items = ext.split_docstring(text)["items"]
        if "**Arguments:**" in text and items is None:
            problems.append((obj.path, "no list after **Arguments:**"))
        names = {name for name, _ in ext._signature(obj)}
        for item in items or ():
            parsed = ext.parse_item(item)
            if parsed is None or not set(parsed[0]) <= names:
                problems.append((obj.path, item[:60]))
        lists += items is not None

    for identifier in sorted(documented_identifiers()):
        walk(package[identifier.removeprefix("jaxmb.")])
    assert problems == []
    assert lists >= 15  # the check above is not vacuous


def test_parse_item_and_split_docstring():
    """The grammar of an argument list item, and the parts of a docstring (hand-written)."""
    ext = load_extension()
    assert ext.parse_item("`a`: one; two") == (["a"], "one; two")
    assert ext.parse_item("`rtol`, `atol`: tolerances;") == (["rtol", "atol"], "tolerances")
    assert ext.parse_item("`k` (static): K, the count") == (["k"], "(static) K, the count")
    assert ext.parse_item("`q` (n,) the state") is None  # no colon: prose
    assert ext.parse_item("state `q`: the state") is None  # not led by the name
    text = (
        "Lead.\n\n**Arguments:**\n\n- `a`: one,\n  continued.\n- `b`: two.\n\nMiddle.\n\n"
        "**Returns:** the\nresult.\n\nAfter."
    )
    assert ext.split_docstring(text) == {
        "before": "Lead.",
        "items": ["`a`: one, continued.", "`b`: two."],
        "between": "Middle.",
        "returns": "the result.",
        "after": "After.",
    }
    inline = "Lead.\n\n**Arguments:** `a`; `b`.\n"
    assert ext.split_docstring(inline)["items"] is None


def nav_pages():
    """The pages of the site's navigation (mkdocs.yml `nav:`), as site folders."""
    with open(os.path.join(ROOT, "mkdocs.yml")) as f:
        config = f.read()
    nav = re.search(r"^nav:\n((?:[ -].*\n)+)", config, flags=re.M).group(1)
    pages = re.findall(r":\s*(\S+\.(?:md|ipynb))\s*$", nav, flags=re.M)
    return {os.path.splitext(p)[0].removesuffix("index") for p in pages}


PUBLIC_MODULES = [
    "jaxmb.batch",
    "jaxmb.drive",
    "jaxmb.drawing",
    "jaxmb.plotting",
    "jaxmb.elements",
    "jaxmb.rigid_limit",
    "jaxmb.studies",
    "jaxmb.spatial",
    "jaxmb.durations",
]
"""jaxmb's public modules besides the package (and `jaxmb.models.*`): their public functions
and classes are part of the reference."""

NOT_API = {"jaxmb.cli", "jaxmb.cli_parser"}
"""Public-named modules that are the command line, documented on the Command line page."""


def module_api(name):
    """The public functions and classes of module `name`: those of its `__all__`, else those it
    defines or re-exports (`from .x import y as y`) without a leading underscore."""
    module = importlib.import_module(name)
    names = getattr(module, "__all__", None)
    if names is None:
        with open(module.__file__) as f:
            tree = ast.parse(f.read())
        exported = {
            a.asname
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            for a in node.names
            if a.asname == a.name
        }
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_")
            and (inspect.isfunction(v) or inspect.isclass(v))
            and (v.__module__ == name or n in exported)
        ]
    return {
        n: getattr(module, n)
        for n in names
        if inspect.isfunction(getattr(module, n)) or inspect.isclass(getattr(module, n))
    }


def test_every_public_function_and_class_is_reachable_from_the_navigation(site):
    """Every public function and class, of jaxmb and of its public modules, has an anchor on a
    page of the navigation (under its own name or another public spelling of the same object,
    as `jaxmb.elements.Revolute` is documented as `jaxmb.Revolute`). Every public-named module
    is either part of the API or the command line, so a new module has to be placed. Each of
    them shows its types: a parameter table with a type in every row where it has parameters,
    and a function its return annotation; and every row of every parameter table of the
    reference (methods included) has a type."""
    modules = [m.name for m in pkgutil.iter_modules(jaxmb.__path__) if not m.name.startswith("_")]
    assert {f"jaxmb.{m}" for m in modules} - {"jaxmb.models"} == set(PUBLIC_MODULES) | NOT_API
    models = [f"jaxmb.models.{m.name}" for m in pkgutil.iter_modules(jaxmb.models.__path__)]
    pages = {}  # anchor -> the HTML of its page
    for page in nav_pages():
        path = site / page / "index.html"
        assert path.is_file(), page
        html = path.read_text(encoding="utf-8")
        pages.update((anchor, html) for anchor in re.findall(r'id="(jaxmb[\w.]*)"', html))
    anchors = set(pages)
    spellings = {}  # object id -> its documented public names
    for name in public_names():
        spellings.setdefault(id(getattr(jaxmb, name)), set()).add(f"jaxmb.{name}")
    missing, count, shown = [], 0, {}
    for module in PUBLIC_MODULES + models:
        assert module in anchors or module in {"jaxmb.elements"}, module
        for name, obj in module_api(module).items():
            count += 1
            found = ({f"{module}.{name}"} | spellings.get(id(obj), set())) & anchors
            if found:
                shown[min(found)] = obj
            else:
                missing.append(f"{module}.{name}")
    missing += [f"jaxmb.{n}" for n in public_names() if f"jaxmb.{n}" not in anchors]
    assert missing == []
    assert count > 60
    shown.update(
        (f"jaxmb.{n}", getattr(jaxmb, n))
        for n in public_names()
        if inspect.isfunction(getattr(jaxmb, n)) or inspect.isclass(getattr(jaxmb, n))
    )
    lacking = [
        problem
        for identifier, obj in sorted(shown.items())
        for problem in untyped(pages[identifier], identifier, obj)
    ]
    assert lacking == [], lacking
    everywhere = [
        f"{identifier}.{name}"
        for html in {id(h): h for h in pages.values()}.values()
        for identifier in re.findall(r'id="(jaxmb[\w.]*)" class="doc doc-heading"', html)
        if "Parameters:" in heading_section(html, identifier)
        for name, (kind, _, _) in parameter_rows(html, identifier).items()
        if not kind
    ]
    assert everywhere == []  # methods too: every row of every table has its type


def heading_section(html, identifier):
    """The HTML from the heading with id `identifier` to the next heading."""
    start = html.index(f'id="{identifier}"')
    end = html.find('class="doc doc-heading"', html.index(">", start))
    return html[start : end if end > 0 else len(html)]


def untyped(html, identifier, obj):
    """What the reference lacks of `obj`'s types (documented at `identifier` in `html`): a
    parameter table where it has parameters, a type in each row, a return annotation of a
    function."""
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):  # no signature to show
        return []
    problems = []
    if inspect.isfunction(obj) and signature.return_annotation is inspect.Signature.empty:
        problems.append(f"{identifier} -> (no return annotation)")
    if not signature.parameters:
        return problems
    if "Parameters:" not in heading_section(html, identifier):
        return [*problems, f"{identifier} (no parameter table)"]
    rows = parameter_rows(html, identifier)
    return problems + [f"{identifier}.{name}" for name, (kind, _, _) in rows.items() if not kind]


PRIVATE = re.compile(r"jaxmb[./]_\w[\w./]*")


def private_links(html):
    """(attribute, value) of every href, id or title naming a private object."""
    return [
        (attr, value)
        for attr, value in re.findall(r'\b(href|id|title)="([^"]*)"', html)
        if PRIVATE.search(value)
    ]


def test_the_site_names_no_private_object(site):
    """A link check: no link of the site points at a private name (`jaxmb._x`), no anchor is one
    and no link title shows one; and the API reference does not mention one in its text (the
    pages `jaxmb._...` would lead to are not on the site). The checks catch each kind in a
    hand-written sample."""
    links = []
    for folder, _, files in os.walk(site):
        for f in files:
            if f.endswith(".html"):
                html = open(os.path.join(folder, f), encoding="utf-8").read()
                page = os.path.relpath(os.path.join(folder, f), site)
                links += [(page, *link) for link in private_links(html)]
    assert links == []
    mentions = [
        (page, m)
        for page in sorted(nav_pages())
        if page.startswith("api/")
        for m in PRIVATE.findall(text_of(page_html(site, page)))
    ]
    assert mentions == []
    sample = (
        '<a href="../x/#jaxmb._io.load">load</a> <span title="jaxmb._model.rows.RowTable">'
        'RowTable</span> <h3 id="jaxmb._io.to_dict"></h3> see <code>jaxmb._analyses.friction'
        "</code> and jaxmb/_model/terms.py"
    )
    assert [a for a, _ in private_links(sample)] == ["href", "title", "id"]
    assert PRIVATE.findall(text_of(sample)) == ["jaxmb._analyses.friction", "jaxmb/_model/terms.py"]
