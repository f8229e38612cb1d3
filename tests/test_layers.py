"""The package's layers hold: no module imports a module of a higher layer (every import,
also those inside functions, read from the source with `ast`), and every module is placed in
a layer, so a new module has to say where it belongs. Imports under `if TYPE_CHECKING:` are
not dependencies (never executed: they name types for annotations, e.g. an element's
`generalized_force(model: "Model", ...)`).

Layers, lowest first (a module may import its own layer and those below):
0. foundations with no jaxmb imports: errors as data, planar geometry, linear algebra, the
   compilation cache, report formatting, the transparent solver wrapper;
1. drives (time functions), input checks, the per-type pair evaluation, the row table;
2. elements (residuals only);
3. the built model (C, gamma, Phi by autodiff);
4. building models, state checks, solvability, the trajectory record, the terms of the
   equations of motion at a state, the singular-passage monitor, the formulation and
   reaction-method bases;
5. dynamics (the per-state solves);
6. what is built on the solves: assembly and velocities, the reaction methods, the
   projection and independent-coordinate formulations, the failure diagnosis;
7. friction (the coupled solve over a reaction method);
8. the user-facing analyses: accelerations, simulate and reactions;
9. model files, the bundled models, studies and workflows, plotting and drawing, the CLI and
   the package's public namespace.
"""

import ast
import os

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "jaxmb")

LAYERS = (
    ("_program_store", "_errors", "_geometry", "_vmap_rules", "_native", "_linalg", "_cache",
     "_report", "_wrapped_solver"),
    ("drive", "_input_checks", "_groups", "_arguments", "_rows"),
    ("elements",),
    ("_model",),
    ("_mechanism", "_state_checks", "_solvability", "_trajectory", "_terms", "_passages",
     "_formulation_base", "_reaction_methods._base"),
    ("_dynamics",),
    ("_assemble", "_velocity", "_reaction_methods", "_projection", "_independent", "_failures"),
    ("_friction",),
    ("_accelerations", "_simulate", "_reactions"),
    ("_io", "models", "studies", "rigid_limit", "batch", "plotting", "drawing", "cli",
     "__main__", ""),
)


def _layer(module):
    """Layer of a dotted module path relative to jaxmb ("" is the package itself): the most
    specific entry that is the module or one of its packages."""
    best = None
    for k, names in enumerate(LAYERS):
        for name in names:
            if module == name or (name and module.startswith(name + ".")):
                if best is None or len(name) > len(best[1]):
                    best = (k, name)
    return None if best is None else best[0]


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
    typing_only = {id(n) for block in ast.walk(tree) if _type_checking(block)
                   for stmt in block.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.level:
            parts = base[: len(base) - (node.level - 1)] if node.level > 1 else list(base)
            target = parts + (node.module.split(".") if node.module else [])
            for alias in node.names:
                sub = ".".join(target + [alias.name])
                is_sub = os.path.exists(os.path.join(ROOT, *sub.split("."))) or os.path.exists(
                    os.path.join(ROOT, *sub.split(".")) + ".py")
                yield sub if is_sub else ".".join(target)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
            for name in names:
                if name == "jaxmb" or (name or "").startswith("jaxmb."):
                    yield name[len("jaxmb."):] if "." in name else ""


def _type_checking(node) -> bool:
    """Whether `node` is an `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`) block."""
    if not isinstance(node, ast.If):
        return False
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def test_every_module_has_a_layer():
    assert [m for m, _, _ in _modules() if _layer(m) is None] == []


def test_no_module_imports_a_higher_layer():
    upward = []
    for module, package, path in _modules():
        own = _layer(module)
        for target in _imports(module, package, path):
            if _layer(target) is not None and _layer(target) > own:
                upward.append(f"{module} (layer {own}) imports {target} "
                              f"(layer {_layer(target)})")
    assert upward == []


def test_the_check_sees_imports():
    """The parser finds the imports it must judge (a check that sees nothing cannot fail)."""
    found = {(m, t) for m, p, path in _modules() for t in _imports(m, p, path)}
    assert ("_reactions", "_trajectory") in found
    assert ("_simulate", "_friction") in found
    assert ("models.mobile_robot", "drive") in found
    assert ("_reaction_methods.compliance", "_errors") in found
    assert ("_reactions", "_simulate") not in found  # Trajectory lives in its own module
    assert ("elements._base", "drive") in found
    assert ("elements._base", "_model") not in found  # under `if TYPE_CHECKING:` only
