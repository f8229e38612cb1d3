"""The package's layers are its folders, and they hold: no module imports a module of a higher
layer (every import, also those inside functions, read from the source with `ast`), and every
module lies in a layer folder or at the top, so a new module says where it belongs by where it
is put. Imports under `if TYPE_CHECKING:` are not dependencies (never executed: they name types
for annotations, e.g. an element's `generalized_force(model: "Model", ...)`).

Layers, lowest first (a module may import its own folder and those below; docs/code_layout.md
says what each holds):
0. `_linalg/`: dense and sparse factorizations, rank decisions, the compiled kernels;
1. `_runtime/`: checked jit and errors as data, the program store, the compilation cache;
1b. `_bodies/`: the body kinds (coordinate widths, qdot = T(q) v, the retraction);
2. `elements/`: planar geometry, drive functions, the elements (residuals only);
3. `_model/`: the built model (C, gamma, Phi by autodiff), its builder, state checks, the terms
   of the equations of motion at a state;
4. `_formulations/`: how simulate integrates (one `integrate` hook per formulation);
5. `_reaction_methods/`: how the multipliers are chosen;
6. `_analyses/`: the user-facing analyses (accelerations, simulate, reactions, solvability, ...);
7. the top level: the public namespace, model files, bundled models, batches, pictures, the CLI.

Below them all, `_custom_types` (the array annotations, named once) imports nothing of jaxmb,
so every layer may use it.
"""

import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jaxmb")

LAYERS = (
    "_linalg",
    "_runtime",
    "_bodies",
    "elements",
    "_model",
    "_formulations",
    "_reaction_methods",
    "_analyses",
)
"""The layer folders, lowest first; every other module (top-level files, `models/`) is in the
top layer."""


BASE = ("_custom_types",)
"""Modules below every layer: they import nothing of jaxmb."""


def _layer(module):
    """Layer of a dotted module path relative to jaxmb ("" is the package itself): -1 for BASE,
    the index of its top folder in LAYERS, or the top layer."""
    if module in BASE:
        return -1
    top = module.split(".")[0]
    return LAYERS.index(top) if top in LAYERS else len(LAYERS)


def _modules():
    for folder, _, files in os.walk(ROOT):
        for f in files:
            if f.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, f), ROOT)[:-3].replace(os.sep, ".")
                package = rel.endswith("__init__")
                rel = rel[: -len("__init__")].rstrip(".") if package else rel
                yield rel, package, os.path.join(folder, f)


def _imports(module, package, path):
    """The jaxmb modules that `module` imports (relative imports resolved; `from . import x`
    counted as the submodule x where x is one)."""
    here = module.split(".") if module else []
    base = here if package else here[:-1]
    tree = ast.parse(open(path).read())
    typing_only = {
        id(n)
        for block in ast.walk(tree)
        if _type_checking(block)
        for stmt in block.body
        for n in ast.walk(stmt)
    }
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = base[: len(base) - (node.level - 1)] if node.level > 1 else list(base)
            target = parts + (node.module.split(".") if node.module else [])
            for alias in node.names:
                sub = ".".join(target + [alias.name])
                is_sub = os.path.exists(os.path.join(ROOT, *sub.split("."))) or os.path.exists(
                    os.path.join(ROOT, *sub.split(".")) + ".py"
                )
                yield sub if is_sub else ".".join(target)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for name in names:
                if name == "jaxmb" or (name or "").startswith("jaxmb."):
                    yield name[len("jaxmb.") :] if "." in name else ""


def _type_checking(node) -> bool:
    """Whether `node` is an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) block."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def test_every_layer_folder_exists_and_holds_modules():
    """LAYERS names real folders (a renamed folder would silently drop to the top layer)."""
    for name in LAYERS:
        assert os.path.isfile(os.path.join(ROOT, name, "__init__.py")), name
        assert len([m for m, _, _ in _modules() if m.startswith(name + ".")]) >= 2, name


def test_private_top_level_modules_are_few():
    """Private modules live in their layer folder; the top level keeps the public modules, model
    files (`_io`) and the modules below every layer (BASE)."""
    private = sorted(
        m for m, package, _ in _modules() if "." not in m and m.startswith("_") and not package
    )
    assert private == sorted(["_io", *BASE]), private


def test_no_module_imports_a_higher_layer():
    upward = []
    for module, package, path in _modules():
        own = _layer(module)
        for target in _imports(module, package, path):
            if _layer(target) is not None and _layer(target) > own:
                upward.append(f"{module} (layer {own}) imports {target} (layer {_layer(target)})")
    assert upward == []


def test_the_check_sees_imports():
    """The parser finds the imports it must judge (a check that sees nothing cannot fail)."""
    found = {(m, t) for m, p, path in _modules() for t in _imports(m, p, path)}
    assert ("_analyses.reactions", "_formulations.trajectory") in found
    assert ("_analyses.simulate", "_analyses.friction") in found
    assert ("models.mobile_robot", "elements.drive") in found
    assert ("_reaction_methods.compliance", "_runtime.errors") in found
    assert ("_analyses.reactions", "_analyses.simulate") not in found
    assert ("elements._base", "elements.drive") in found
    assert ("elements._base", "_model.model") not in found  # under `if TYPE_CHECKING:` only
    assert _layer("_formulations.base") < _layer("_reaction_methods.eliminate")
    assert ("elements.revolute", "_custom_types") in found
    assert _layer("_custom_types") < _layer("_linalg.dense")


def test_quick_subset_names_existing_modules():
    """`pytest -m quick` (README) selects the modules of conftest.QUICK_MODULES: each must be a
    test file here, so that a renamed module cannot silently shrink the subset."""
    import conftest

    here = os.path.dirname(os.path.abspath(__file__))
    missing = [
        m for m in conftest.QUICK_MODULES if not os.path.isfile(os.path.join(here, f"{m}.py"))
    ]
    assert not missing and len(conftest.QUICK_MODULES) >= 8, missing
