"""jaxtyping annotations of the public API (issue 19, item 4).

Every public function and method of jaxmb (the `jaxmb` namespace, `mb.batch`, `mb.drive`, the
element classes of `jaxmb.elements`) annotates each argument and its result, every field of a
public equinox Module (or dataclass) is annotated, and nothing is annotated with a bare array
type (`jax.Array`, `np.ndarray`, `ArrayLike`): arrays carry a jaxtyping dtype and shape
(`Float[Array, " n"]`). Parameters named like states and times (q, qd, t, ts, ...) must be
jaxtyping-annotated, and a `model` parameter is annotated `Model`. The public names are read
from the modules themselves (`dir`), so a new name cannot skip the check.

The annotations are not only present but right: built elements, drive functions and a model
satisfy their field annotations (jaxtyping `isinstance`, dtype and shape), and the main
analyses, traced with `jax.eval_shape` (no compilation), take and return what their
annotations say, with one binding of the dimension names per call (the `n` of q is the `n` of
the result, ...). jaxmb itself checks nothing at run time (annotations only).
"""

import ast
import dataclasses
import inspect
import os
import types
import typing

import equinox as eqx
import jax
import jax.numpy as jnp
import jaxtyping
import numpy as np

import jaxmb as mb
from jaxmb import batch, elements, spatial
from jaxmb.elements import drive

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = (batch, drive, elements, spatial)
"""The public submodules whose own definitions are public API besides the namespace."""

ARRAY_PARAMETERS = {
    "q",
    "qd",
    "qdd",
    "t",
    "ts",
    "q0",
    "qd0",
    "t0",
    "t1",
    "gamma",
    "velocity",
    "initial_velocity",
    "lam",
    "M",
    "F",
    "C",
    "slip_rate",
    "dt0",
    "mass",
    "inertia",
}
"""Parameters that hold numbers: their annotation must be a jaxtyping array type."""

BARE_ARRAYS = (jax.Array, np.ndarray)


# ----- what is public ------------------------------------------------------------------------
def _public(module, own_only):
    for name in dir(module):
        obj = getattr(module, name)
        if name.startswith("_") or inspect.ismodule(obj):
            continue
        if own_only and not getattr(obj, "__module__", "").startswith(module.__name__):
            continue  # imported helpers (e.g. `drive.solve`) are not that module's API
        yield f"{module.__name__}.{name}", obj


def public_objects():
    """(qualified name, object) of every public function and class, deduplicated."""
    found = {}
    for name, obj in [*_public(mb, False), *(p for m in MODULES for p in _public(m, True))]:
        if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) not in found:
            found[id(obj)] = (name, obj)
    return sorted(found.values(), key=lambda p: p[0])


def _own_definition(cls, name):
    """The raw class attribute `name` of `cls` (from its MRO) when jaxmb defines it."""
    for klass in cls.__mro__:
        if name in vars(klass):
            return vars(klass)[name] if klass.__module__.startswith("jaxmb") else None
    return None


def signatures():
    """(label, function, is_property) of every public function and of each method and
    property that jaxmb defines on a public class (dataclass-generated `__init__`s are left
    to the field check)."""
    out = []
    for name, obj in public_objects():
        if inspect.isfunction(obj):
            out.append((name, obj, False))
            continue
        for attr in dir(obj):
            if attr.startswith("_") and attr not in ("__init__", "__call__"):
                continue
            raw = _own_definition(obj, attr)
            if isinstance(raw, property):
                out.append((f"{name}.{attr}", raw.fget, True))
            elif isinstance(raw, (staticmethod, classmethod)):
                out.append((f"{name}.{attr}", raw.__func__, False))
            elif inspect.isfunction(raw) and not raw.__code__.co_filename.startswith("<"):
                out.append((f"{name}.{attr}", raw, False))
    return out


def module_fields():
    """(label, annotation) of every field of a public dataclass or equinox Module."""
    out = []
    for name, obj in public_objects():
        if inspect.isclass(obj) and dataclasses.is_dataclass(obj):
            out += [(f"{name}.{f.name}", f.type) for f in dataclasses.fields(obj)]
    return out


# ----- what an annotation must be ------------------------------------------------------------
def _parts(annotation):
    """The annotation and, recursively, its union members and type arguments."""
    yield annotation
    if isinstance(annotation, type) and issubclass(annotation, jaxtyping.AbstractArray):
        return
    for arg in typing.get_args(annotation):
        yield from _parts(arg)


def is_jaxtyping(annotation) -> bool:
    """Whether the annotation is (or unions, or nests) a jaxtyping array type."""
    return any(
        isinstance(p, type) and issubclass(p, jaxtyping.AbstractArray) for p in _parts(annotation)
    )


def is_bare_array(annotation) -> bool:
    """Whether an array type appears without jaxtyping's dtype and shape."""
    return any(p in BARE_ARRAYS for p in _parts(annotation))


def _is_model(annotation) -> bool:
    """`Model`, or `ModelView` (the model as an element reads it, below the model layer)."""
    from jaxmb.elements.model_view import ModelView

    return annotation in (mb.Model, ModelView) or annotation in ("Model", "ModelView")


def problems(label, fn, is_property=False):
    """What is wrong with the annotations of `fn`, as readable lines."""
    found = []
    hints = fn.__annotations__
    sig = inspect.signature(fn)
    params = list(sig.parameters.values())
    if params and params[0].name in ("self", "cls"):
        params = params[1:]
    for p in params:
        ann = p.annotation
        if ann is p.empty:
            found.append(f"{label}: argument {p.name!r} has no annotation")
        elif is_bare_array(ann):
            found.append(f"{label}: argument {p.name!r} is a bare array type ({ann})")
        elif p.name in ARRAY_PARAMETERS and not is_jaxtyping(ann):
            found.append(f"{label}: argument {p.name!r} is not a jaxtyping array ({ann})")
        elif p.name == "model" and not _is_model(ann):
            found.append(f"{label}: argument 'model' is not annotated Model ({ann})")
    if fn.__name__ != "__init__" and "return" not in hints:
        found.append(f"{label}: {'property' if is_property else 'result'} has no annotation")
    elif "return" in hints and is_bare_array(hints["return"]):
        found.append(f"{label}: result is a bare array type ({hints['return']})")
    return found


def field_problems(label, annotation):
    if is_bare_array(annotation):
        return [f"{label}: field is a bare array type ({annotation})"]
    if annotation in (typing.Any, object, tuple, list, dict):
        return [f"{label}: field annotation {annotation} says nothing"]
    return []


# ----- the checks ----------------------------------------------------------------------------
def test_public_submodules_are_all_checked():
    """Every submodule that jaxmb/__init__.py itself imports as public (`from . import batch
    as batch`) is in MODULES, and the element catalogue is (it is re-exported by name)."""
    with open(os.path.join(ROOT, "jaxmb", "__init__.py")) as f:
        tree = ast.parse(f.read())
    imported = {
        alias.asname or alias.name
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is None
        for alias in node.names
    }
    assert imported <= {m.__name__.split(".")[-1] for m in MODULES}, imported
    assert elements in MODULES


def test_every_public_signature_and_field_is_annotated():
    """No public argument, result or Module field lacks an annotation or uses a bare array
    type; the lists are long enough that the check is not vacuous."""
    sigs = signatures()
    fields = module_fields()
    found = [line for label, fn, prop in sigs for line in problems(label, fn, prop)]
    found += [line for label, ann in fields for line in field_problems(label, ann)]
    assert found == [], "\n".join(found)
    names = {label for label, _, _ in sigs}
    for expected in (
        "jaxmb.simulate",
        "jaxmb.batch.map",
        "jaxmb.elements.drive.as_drive",
        "jaxmb.Model.C",
        "jaxmb.Revolute.residual",
        "jaxmb.Compliance.__init__",
        "jaxmb.elements.drive.Spline.__call__",
        "jaxmb.Reactions.on_body",
    ):
        assert expected in names, expected
    assert len(sigs) > 150 and len(fields) > 150, (len(sigs), len(fields))
    assert sum(is_jaxtyping(ann) for _, ann in fields) > 100


def test_checker_reports_what_it_should():
    """The checker is not vacuous: a missing annotation, a bare array, an unshaped state
    argument, an unannotated result and a bare-array field are each reported (hand-made
    offenders), and well-annotated code passes."""
    Float, Array = jaxtyping.Float, jaxtyping.Array

    def bad(model, q: jax.Array, t: float, n: int) -> jnp.ndarray: ...

    def no_result(model: mb.Model, q: Float[Array, " n"]): ...

    def good(model: mb.Model, q: Float[Array, " n"] | None, *, k: int = 1) -> Float[Array, ""]: ...

    found = problems("bad", bad)
    assert any("'model' has no annotation" in p for p in found)
    assert any("'q' is a bare array" in p for p in found)
    assert any("'t' is not a jaxtyping array" in p for p in found)
    assert any("result is a bare array" in p for p in found)
    assert problems("no_result", no_result) == ["no_result: result has no annotation"]
    assert problems("good", good) == []
    assert _is_model("Model")  # as the elements spell it (the model module imports them)

    class Bad(eqx.Module):
        x: jnp.ndarray
        y: tuple

    assert [len(field_problems(f.name, f.type)) for f in dataclasses.fields(Bad)] == [1, 1]
    # Real[ArrayLike, ""] is a Union with int and float members, `| None` adds None: both
    # still count as jaxtyping; jax.Array alone does not, and is bare even inside a Union
    for ann in (jaxtyping.Real[jaxtyping.ArrayLike, ""], Float[Array, " n"] | None):
        assert is_jaxtyping(ann) and not is_bare_array(ann)
    assert not is_jaxtyping(jax.Array) and is_bare_array(jax.Array | None)


def matches(value, annotation) -> bool:
    """isinstance against an annotation, union members one by one (a typing.Union checks
    the type of the value, not the value, which a jaxtyping shape needs)."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(matches(value, a) for a in typing.get_args(annotation))
    if annotation is type(None):
        return value is None
    if isinstance(typing.get_origin(annotation), type):  # Sequence[float]: a sequence
        return isinstance(value, typing.get_origin(annotation))
    return isinstance(value, annotation)


def _check_fields(module, where):
    """Every jaxtyping-annotated field of `module` holds a value of that dtype and shape,
    dimension names bound once for the whole module."""
    checked = 0
    with jaxtyping.jaxtyped("context"):
        for f in dataclasses.fields(module):
            if is_jaxtyping(f.type) and typing.get_origin(f.type) is not tuple:
                value = getattr(module, f.name)
                assert matches(value, f.type), (where, f.name, f.type, jnp.shape(value))
                checked += 1
    return checked


def every_element_model():
    """A model holding one element of every type and every drive function (its numbers need
    not assemble: nothing here runs the analyses)."""
    D = drive
    m = mb.Mechanism()
    a = m.body("a", 1.0, 0.1, q=(0.0, 0.0, 0.0))
    b = m.body("b", 2.0, 0.2, q=(1.0, 0.0, 0.0))
    c = m.body("c", 3.0, 0.3, q=(2.0, 0.0, 0.0))
    v2 = (1.0, 0.0)
    for e in (
        mb.Revolute("R", m.ground, a, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)),
        mb.Translational("T", b, m.ground, s_i=(0.0, 0.0), s_j=(1.0, 0.0), v=(0.0, 1.0)),
        mb.Distance("D", a, b, s_i=v2, s_j=v2, length=1.0),
        mb.Parallel("P", a, c, a_i=v2, a_j=v2),
        mb.PinInSlot("S", b, c, s_i=v2, s_j=v2, a_i=v2),
        mb.Gear("G", a, b, ratio=-2.0),
        mb.GearOnLink("GL", a, b, c, ratio=0.5, offset=0.1),
        mb.Weld("W", b, c, s_i=v2),
        mb.TranslationalDriver("TD", a, c, s_i=v2, s_j=v2, u=v2, d=D.Linear(0.1, 1.0)),
        mb.RelativeAngleDriver("RD", a, b, f=D.Harmonic(0.1, 2.0, phase=0.3)),
        mb.AbsoluteDriver("AD", c, 1, f=D.Spline((0.0, 1.0, 2.0), (0.0, 0.5, 0.2))),
        mb.KnifeEdge("K", c, s=v2, n=(0.0, 1.0)),
        mb.Gravity((0.0, -9.81)),
        mb.SpringDamper("SD", a, c, s_i=v2, s_j=v2, stiffness=10.0, damping=1.0, free_length=0.5),
        mb.RotationalSpringDamper("RS", a, c, stiffness=1.0, damping=0.1),
        mb.Force("F", a, s=v2, f=D.Constant((1.0, 2.0))),
        mb.Torque("Tq", b, D.Offset(0.5, D.SmoothSteps((0.0,), (1.0,), (2.0,)))),
        mb.Torque("Tp", c, D.Polynomial((1.0, 2.0, 3.0))),
        mb.Bushing("B", a, c, s_i=v2, s_j=v2, stiffness=(1e3, 1e3, 10.0)),
        mb.RevoluteFriction("fR", "R", mu=0.1, radius=0.01),
        mb.TranslationalFriction("fT", "T", mu=0.1, length=0.05),
    ):
        m.add(e)
    return m.build()


def test_built_modules_satisfy_their_field_annotations():
    """A model with every element type and drive function: the Model's, each element's and
    each drive's array fields hold what their annotations say (float64, shape)."""
    model = every_element_model()
    types_seen = {type(e).__name__ for e in (*model.pairs, *model.force_elements, *model.friction)}
    catalogue = {
        name
        for name, cls in vars(elements).items()
        if inspect.isclass(cls) and not name.startswith("Abstract")
    }
    assert types_seen == catalogue  # a new element type must be added above
    checked = _check_fields(model, "Model")
    drives = set()
    for e in (*model.pairs, *model.force_elements, *model.friction):
        checked += _check_fields(e, e.name)
        for leaf in jax.tree.leaves(e, is_leaf=lambda x: isinstance(x, drive.AbstractDrive)):
            if isinstance(leaf, drive.AbstractDrive):
                for d in (leaf, getattr(leaf, "delta", None)):
                    if d is not None:
                        checked += _check_fields(d, type(d).__name__)
                        drives.add(type(d).__name__)
    assert drives == {
        name
        for name, _ in (
            (n, c)
            for n, c in vars(drive).items()
            if inspect.isclass(c)
            and issubclass(c, drive.AbstractDrive)
            and c.__module__ == drive.__name__
            and not n.startswith("Abstract")
        )
    }
    assert checked > 50


def _annotated_call(fn, *args, **kwargs):
    """Call `fn` checking each jaxtyping-annotated argument and the result (and, for a
    Module result, its fields) against the annotations, in one jaxtyping context: a
    dimension name means one size throughout the call."""
    sig = inspect.signature(fn)
    bound = sig.bind(*args, **kwargs)
    bound.apply_defaults()
    with jaxtyping.jaxtyped("context"):
        for name, value in bound.arguments.items():
            ann = sig.parameters[name].annotation
            if is_jaxtyping(ann) or _is_model(ann):
                assert matches(value, mb.Model if _is_model(ann) else ann), (fn, name)
        out = fn(*args, **kwargs)
        several = typing.get_origin(sig.return_annotation) is tuple
        returns = typing.get_args(sig.return_annotation) if several else (sig.return_annotation,)
        for value, ann in zip(out if several else (out,), returns, strict=True):
            assert matches(value, ann), (fn, ann)
            if dataclasses.is_dataclass(value):
                fields = {f.name: f.type for f in dataclasses.fields(value)}
            else:  # a NamedTuple (Model.kinematic_terms)
                fields = typing.get_type_hints(type(value)) if hasattr(value, "_fields") else {}
            for name, field_type in fields.items():
                if is_jaxtyping(field_type):
                    assert matches(getattr(value, name), field_type), (fn, name, field_type)
    return out


def test_analyses_return_what_their_annotations_say():
    """assemble, consistent_velocity, accelerations, solvability (with groups: every field
    set), reactions and friction_forces (with friction: every field set), kinematics,
    reaction_matrix_multipliers and Model's constraint terms, traced (not compiled) on a small
    slider-crank: every argument and every result (each field of a result Module) matches its
    annotation, the dimension names bound once per call."""
    m = mb.Mechanism()
    crank = m.body("crank", 1.0, 0.01, q=(0.1, 0.0, 0.0))
    slider = m.body("slider", 0.5, 0.001, q=(0.4, 0.0, 0.0))
    m.add(mb.Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=(-0.1, 0.0)))
    m.add(mb.Distance("rod", crank, slider, s_i=(0.1, 0.0), s_j=(0.0, 0.0), length=0.2))
    m.add(mb.Translational("P", slider, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.Gravity((0.0, -9.81)))
    plain = m.build()
    m.add(mb.RevoluteFriction("fO", "O", mu=0.1, radius=0.01))
    model = m.build()
    q, qd, ts = model.q0, jnp.zeros(model.n), jnp.linspace(0.0, 1.0, 3)
    calls = (
        (mb.assemble, (model, q, 0.5), {}),
        (mb.consistent_velocity, (model, q, qd), {}),
        (mb.accelerations, (plain, q, qd, 0.0), {}),
        (mb.solvability, (model, q), {"groups": {"g": ("O", "rod")}}),
        (mb.reactions, (model, q, qd), {"check": False}),
        (mb.friction_forces, (model, q, qd), {}),
        (mb.kinematics, (plain, ts), {}),
        (mb.reaction_matrix_multipliers, (plain, q, qd), {"rank": model.m}),
        (model.C, (q, 0.1), {}),
        (model.kinematic_terms, (q, qd), {}),
    )
    for fn, args, kwargs in calls:  # one trace each: a trace's cost grows with what it holds
        jax.eval_shape(lambda: eqx.filter(_annotated_call(fn, *args, **kwargs), eqx.is_array))
