"""The documentation site (mkdocs.yml, docs/) builds with `mkdocs build --strict`, so a broken
cross-reference, a missing page or a docstring that no longer resolves fails the tests; every
public name of jaxmb has an entry in the API reference; the code in the pages refers only to
names jaxmb has; the signatures the reference shows for equinox Modules are their real ones."""

import ast
import importlib.util
import inspect
import os
import re
import subprocess
import sys

import equinox as eqx
import pytest

import jaxmb

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")
EXTENSION = os.path.join(DOCS, "_ext", "griffe_lists.py")
ENV = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}


def mkdocs_build(config, site):
    """(exit code, output) of `mkdocs build --strict`, run in the repository root."""
    pytest.importorskip("mkdocs", reason="the docs extra is part of the test extra")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", config, "-d", site],
        cwd=ROOT, env=ENV, capture_output=True, text=True, timeout=300,
    )
    return run.returncode, run.stdout + run.stderr


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    site = tmp_path_factory.mktemp("site")
    code, output = mkdocs_build(os.path.join(ROOT, "mkdocs.yml"), str(site))
    assert code == 0, output
    return site


def public_names():
    """The names jaxmb/__init__.py re-exports (`from .x import y as y`; modules `mb.batch` and
    `mb.drive` included), read from the source: vars(jaxmb) would also list any submodule
    another test imported."""
    with open(os.path.join(ROOT, "jaxmb", "__init__.py")) as f:
        tree = ast.parse(f.read())
    return sorted(alias.asname or alias.name for node in tree.body
                  if isinstance(node, ast.ImportFrom) and node.level == 1
                  for alias in node.names if not (alias.asname or alias.name).startswith("_"))


def documented_identifiers():
    """Every `::: identifier` directive of the API reference pages."""
    found = set()
    for name in os.listdir(os.path.join(DOCS, "api")):
        with open(os.path.join(DOCS, "api", name)) as f:
            found |= set(re.findall(r"^::: (\S+)", f.read(), flags=re.M))
    return found


def test_site_builds_strict_with_every_public_name(site):
    """The strict build passed (fixture); each public name has its own anchor in the rendered
    reference, and the `**Arguments:**` lists of the docstrings render as lists."""
    html = "".join(
        open(os.path.join(d, f)).read()
        for d, _, files in os.walk(site / "api") for f in files if f.endswith(".html")
    )
    missing = [n for n in public_names() if f'id="jaxmb.{n}"' not in html]
    assert missing == []
    assert "<li><code>rtol</code>, <code>atol</code>: error tolerances" in html  # simulate
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
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) \
                    and node.value.id == "mb" and not hasattr(jaxmb, node.attr):
                missing.append((page, f"mb.{node.attr}"))
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Attribute) \
                    and isinstance(node.value.value, ast.Name) and node.value.value.id == "mb" \
                    and node.value.attr == "drive" and not hasattr(jaxmb.drive, node.attr):
                missing.append((page, f"mb.drive.{node.attr}"))
    assert missing == []


def test_equinox_signatures_match_the_real_ones():
    """The griffe extension reconstructs each equinox Module's generated `__init__` from its
    fields by static analysis; compare with `inspect.signature` of the imported class: same
    parameter names in the same order, same defaults."""
    griffe = pytest.importorskip("griffe")
    spec = importlib.util.spec_from_file_location("jaxmb_docs_griffe_lists", EXTENSION)
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    package = griffe.load("jaxmb", search_paths=[ROOT],
                          extensions=griffe.load_extensions(ext.EquinoxSignatures()))
    checked = 0
    for name in public_names():
        cls = getattr(jaxmb, name)
        if not (inspect.isclass(cls) and issubclass(cls, eqx.Module)) \
                or name.startswith("Abstract"):  # never instantiated: no generated __init__
            continue
        real = inspect.signature(cls).parameters.values()
        init = package[name].all_members.get("__init__")
        shown = list(init.parameters)[1:]  # without self
        assert [p.name for p in shown] == [p.name for p in real], name
        for p_shown, p_real in zip(shown, real):
            where = (name, p_real.name)
            assert (p_shown.default is None) == (p_real.default is p_real.empty), where
            if p_real.default is not p_real.empty:
                assert ast.literal_eval(str(p_shown.default)) == p_real.default, where
        checked += 1
    assert checked >= 20


def test_separate_lists_inserts_blank_lines_only_where_needed():
    """A list right under its lead-in line gets a blank line before its first item only;
    fenced code is untouched (hand-written cases)."""
    spec = importlib.util.spec_from_file_location("jaxmb_docs_griffe_lists", EXTENSION)
    ext = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ext)
    text = "**Arguments:**\n- `a`: one,\n  continued.\n- `b`: two.\n\nText.\n```\nx\n- y\n```"
    want = "**Arguments:**\n\n- `a`: one,\n  continued.\n- `b`: two.\n\nText.\n```\nx\n- y\n```"
    assert ext.separate_lists(text) == want
    assert ext.separate_lists(want) == want
