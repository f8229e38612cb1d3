"""Model files (`mb.save`, `mb.load`, `jaxmb._io`): round trips, schema errors, the CLI.

References:
- round trip: the original model, built in Python with every element type and every drive type
  (random parameters), is the reference for the loaded one: C, gamma, Phi (`Model.kinematic_terms`),
  the applied forces and the mass matrix at random states and times must agree to 1e-12, for .json
  and for .yaml. (Floats are written with `repr` precision, so they agree bitwise; 1e-12 is the
  float64 algebra tolerance, leaving no room for a lost digit.)
- example files: the built-in models of `jaxmb.models` (same names, same default arguments);
- drive.Offset: its formula f(t) = base + delta(t) and the closed-form derivative of delta;
- CLI `report` on the robot file: seed 001 section 4.2 (rank 20 = 17 + 4, p = 2, dof = n - rank = 1,
  the unique pairs), as in tests/test_cli_examples.py; its Compliance table: the unique pairs'
  min-norm multipliers, and equal rear-axle tyre forces (hand derivation);
- CLI `simulate` on the robot file: `jaxmb simulate mobile_robot` (the built-in Python model) run
  with the same arguments.
Each schema error is checked for a message that names the offending entry and the problem.
"""

import copy
import json
import os
import re
import subprocess
import sys

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb
from jaxmb import _io, drive, elements
from jaxmb.models import mobile_robot, slider_crank

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODELS = os.path.join(ROOT, "examples", "models")
ROBOT_FILE = os.path.join(MODELS, "mobile_robot.yaml")
ALGEBRA_TOL = 1e-12
NUM_STATES = 3
CLI_T1, CLI_SAVES = 1.0, 11  # covers the start of the first steering ramp (0.5 s to 2.5 s)
CLI_REPORT_T = 1.2  # in the first steering ramp: the robot turns, its reactions are not zero


# ----- a model with every element type and every drive type --------------------------------------
def _all_types_model(rng):
    """Four bodies, one element of every type (two AbsoluteDrivers), every drive type once."""

    def v():
        return rng.uniform(-1.0, 1.0, 2)

    def x():
        return float(rng.uniform(0.2, 2.0))

    m = mb.Mechanism()
    a, b, c, d = (
        m.body(name, mass=x(), inertia=x(), q=rng.uniform(-1.0, 1.0, 3))
        for name in ("a", "b", "c", "d")
    )
    knots = np.sort(rng.uniform(0.0, 3.0, 4))
    starts = np.array([0.2, 1.4]) + rng.uniform(0.0, 0.1, 2)
    m.add(mb.Revolute("R", m.ground, a, s_i=v(), s_j=v()))
    m.add(mb.Translational("T", a, b, s_i=v(), s_j=v(), v=v(), angle=x()))
    m.add(mb.Distance("D", b, c, s_i=v(), s_j=v(), length=x()))
    m.add(mb.Parallel("P", c, d, a_i=v(), a_j=v()))
    m.add(mb.PinInSlot("S", a, c, s_i=v(), s_j=v(), a_i=v()))
    m.add(mb.Gear("G", b, d, ratio=-x(), offset=x()))
    m.add(mb.GearOnLink("GL", a, b, c, ratio=x(), offset=x()))
    m.add(mb.Weld("W", c, d, s_i=v(), s_j=v(), angle=x()))
    m.add(
        mb.TranslationalDriver(
            "TD",
            m.ground,
            b,
            s_i=v(),
            s_j=v(),
            u=v(),
            d=drive.Offset(x(), drive.Spline(knots, rng.normal(size=4))),
        )
    )
    m.add(mb.RelativeAngleDriver("RA", a, d, f=drive.Harmonic(x(), x(), x(), x()), offset=x()))
    m.add(mb.AbsoluteDriver("AX", c, 0, f=drive.Polynomial(rng.normal(size=4))))
    m.add(mb.AbsoluteDriver("AP", d, 2, f=drive.SmoothSteps(starts, starts + 0.8, v(), x())))
    m.add(mb.KnifeEdge("K", d, s=v(), n=v()))
    m.add(mb.Gravity(v()))
    m.add(
        mb.SpringDamper(
            "SD", m.ground, a, s_i=v(), s_j=v(), stiffness=x(), damping=x(), free_length=x()
        )
    )
    m.add(mb.RotationalSpringDamper("RS", b, c, stiffness=x(), damping=x(), free_angle=x()))
    m.add(mb.Force("F", c, s=v(), f=drive.Linear(v(), v())))
    m.add(mb.Torque("Tq", d, tau=drive.Constant(x())))
    m.add(mb.Torque("Tq2", a, tau=x()))
    m.add(
        mb.Bushing(
            "BU",
            a,
            c,
            s_i=v(),
            s_j=v(),
            stiffness=rng.uniform(0.5, 2.0, 3),
            damping=rng.uniform(0.1, 1.0, 3),
            free_angle=x(),
        )
    )
    m.add(mb.RevoluteFriction("fR", "R", mu=x(), radius=x(), velocity_scale=x()))
    m.add(mb.TranslationalFriction("fT", "T", mu=x(), length=x()))
    return m.build()


@eqx.filter_jit
def _terms(model, qs, qds, ts):
    """(C, gamma, Phi, F) at a batch of states, and M."""

    def one(q, qd, t):
        k = model.kinematic_terms(q, qd, t)
        return k.C, k.gamma, k.phi, model.forces(q, qd, t)

    return jax.vmap(one)(qs, qds, ts), model.mass_matrix()


@pytest.fixture(scope="module")
def original():
    rng = np.random.default_rng(7)
    model = _all_types_model(rng)
    qs = rng.normal(size=(NUM_STATES, model.n))
    qds = rng.normal(size=(NUM_STATES, model.n))
    ts = np.array([0.1, 0.9, 1.7])  # inside the spline and the smooth steps
    return model, (qs, qds, ts), _terms(model, qs, qds, ts)


def _drive_types(value):
    """Drive type names in a saved element entry (plain numbers are `Constant`)."""
    if isinstance(value, dict):
        own = {value["type"]} if value.get("type") in _io.DRIVE_TYPES else set()
        return own.union(*(_drive_types(v) for v in value.values()))
    return set()


def test_registries_hold_every_element_and_drive_type(original):
    """ELEMENT_TYPES is every concrete element class jaxmb exports, DRIVE_TYPES every concrete
    drive.AbstractDrive subclass; the fixture model holds each of them (so a new type must be
    added to the fixture, and so to the round trip)."""
    exported = {
        name
        for name, obj in vars(mb).items()
        if isinstance(obj, type) and issubclass(obj, elements.AbstractElement)
    }
    assert set(_io.ELEMENT_TYPES) == exported
    drives = {
        name
        for name, obj in vars(drive).items()
        if isinstance(obj, type)
        and issubclass(obj, drive.AbstractDrive)
        and obj is not drive.AbstractDrive
    }
    assert set(_io.DRIVE_TYPES) == drives
    data = _io.to_dict(original[0])
    assert {e["type"] for e in data["elements"]} == set(_io.ELEMENT_TYPES)
    used = set().union(*(_drive_types(e) for e in data["elements"])) | {"Constant"}
    assert used == set(_io.DRIVE_TYPES)
    assert all(isinstance(e["tau"], float) for e in data["elements"] if e["type"] == "Torque")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_round_trip_every_type(original, tmp_path, suffix):
    """save -> load gives the same model: names, rows, q0, masses, and C, gamma, Phi, forces and
    M at random states equal to the original's to 1e-12; the saved data is identical."""
    model, states, (ref, ref_M) = original
    path = tmp_path / f"model{suffix}"
    mb.save(model, path)
    loaded = mb.load(path)
    assert loaded.body_names == model.body_names
    assert loaded.pair_names == model.pair_names
    assert [type(p) for p in loaded.pairs] == [type(p) for p in model.pairs]
    assert [type(f) for f in loaded.force_elements] == [type(f) for f in model.force_elements]
    assert [(type(f), f.pair) for f in loaded.friction] == [
        (type(f), f.pair) for f in model.friction
    ]
    assert all(loaded.rows(n) == model.rows(n) for n in model.pair_names)
    for field in ("q0", "masses", "inertias"):
        np.testing.assert_allclose(
            getattr(loaded, field), getattr(model, field), rtol=0, atol=ALGEBRA_TOL
        )
    got, got_M = _terms(loaded, *states)
    for name, a, b in zip(("C", "gamma", "Phi", "forces"), got, ref):
        assert np.max(np.abs(a - b)) <= ALGEBRA_TOL * max(1.0, np.max(np.abs(b))), name
    np.testing.assert_allclose(got_M, ref_M, rtol=0, atol=ALGEBRA_TOL)
    assert _io.to_dict(loaded) == _io.to_dict(model)


def test_initial_velocity_round_trip(tmp_path):
    """`initial_velocity` is stored and read back (load_file); `load` returns the model only."""
    model = slider_crank.build()
    qd0 = np.linspace(-1.0, 1.0, model.n) / 3.0
    path = tmp_path / "crank.yml"
    mb.save(model, path, initial_velocity=qd0)
    loaded, qd = _io.load_file(path)
    np.testing.assert_array_equal(np.asarray(qd), qd0)
    assert isinstance(mb.load(path), mb.Model)
    assert _io.to_dict(loaded) == _io.to_dict(model)
    assert _io.load_file(tmp_path / "crank.yml")[1] is not None
    mb.save(model, tmp_path / "none.json")
    assert _io.load_file(tmp_path / "none.json")[1] is None


def test_example_files_are_the_builtin_models():
    """examples/models/*: the built-in slider-crank and mobile robot (default arguments), and the
    robot's initial velocity of seed 001 eq. 39 (0.1 m/s along x for every body)."""
    crank = mb.load(os.path.join(MODELS, "slider_crank.json"))
    assert _io.to_dict(crank) == _io.to_dict(slider_crank.build())
    robot, qd0 = _io.load_file(ROBOT_FILE)
    builtin = mobile_robot.build()
    assert _io.to_dict(robot) == _io.to_dict(builtin)
    np.testing.assert_array_equal(qd0, mobile_robot.initial_velocity(builtin))


def test_compliance_entry_round_trip(tmp_path):
    """The `compliance` entry: mb.save(..., compliance=...) -> load_parts gives the same
    stiffness (per pair and per row) and default, for .json and .yaml; the robot's example file
    holds mobile_robot.compliance() (STIFFNESS, DEFAULT_STIFFNESS); a stiffness file (the entry
    alone) reads back the same; load_file and load ignore it."""
    model = mobile_robot.build()
    method = mb.Compliance({"B": 2e7, "H": (1e8, 5e4), "W1": 512.5}, default=1e8)
    for suffix in (".json", ".yaml"):
        path = tmp_path / f"robot{suffix}"
        mb.save(model, path, compliance=method)
        parts = _io.load_parts(path)
        assert _io.to_dict(parts.model) == _io.to_dict(model) and parts.initial_velocity is None
        assert _io.compliance_dict(parts.compliance, model) == {
            "stiffness": {"B": 2e7, "H": [1e8, 5e4], "W1": 512.5},
            "default": 1e8,
        }
        assert isinstance(mb.load(path), mb.Model)
    example = _io.load_parts(ROBOT_FILE).compliance
    builtin = mobile_robot.compliance()
    assert _io.compliance_dict(example, model) == _io.compliance_dict(builtin, model)
    import yaml

    stiffness_file = tmp_path / "stiffness.yaml"
    stiffness_file.write_text(yaml.safe_dump(_io.compliance_dict(builtin, model)))
    again = _io.load_compliance(stiffness_file, model)
    assert _io.compliance_dict(again, model) == _io.compliance_dict(builtin, model)


COMPLIANCE_ERRORS = {
    "unknown pair": (
        {"stiffness": {"BB": 1.0}, "default": 1.0},
        "compliance: stiffness: unknown pair 'BB' (did you mean 'B'?)",
    ),
    "not positive": (
        {"stiffness": {"B": -1.0}, "default": 1.0},
        "compliance: stiffness of pair 'B' = -1.0 must be positive and finite",
    ),
    "missing": (
        {"stiffness": {"B": 1.0}},
        "compliance: Compliance has no stiffness for pair(s) ['A', 'C',",
    ),
    "rows": (
        {"stiffness": {"H": [1.0, 2.0, 3.0]}, "default": 1.0},
        "compliance: Compliance stiffness of pair 'H' has shape (3,); give one number or "
        "one per row (2)",
    ),
    "key": ({"stifness": {}}, "compliance: unknown key 'stifness' (did you mean 'stiffness'?)"),
    "text": (
        {"stiffness": {"B": "2.0e7"}, "default": 1.0},
        "compliance: stiffness: 'B' must be a number or a list of numbers, got '2.0e7' "
        "(YAML reads exponents without a decimal point or a sign as text",
    ),
}


@pytest.mark.parametrize("case", list(COMPLIANCE_ERRORS))
def test_compliance_entry_errors(case):
    """Each bad `compliance` entry is a ValueError naming the entry and the problem."""
    entry, message = COMPLIANCE_ERRORS[case]
    with pytest.raises(ValueError, match=re.escape(message)):
        _io.compliance_from(entry, mobile_robot.build())


def test_hand_written_yaml():
    """A hand-written file (comments, defaults left out, a constant drive as a number, an explicit
    Constant, `q` omitted) builds the same model as the Python calls it describes."""
    text = """
    # a crank driven at 2 rad/s
    jaxmb_model: 1
    bodies:
      - {name: crank, mass: 1.0, inertia: 0.01, q: [0.05, 0.0, 0.0]}
      - {name: block, mass: 2.0, inertia: 0.02}
    elements:
      - {type: Revolute, name: O, i: ground, j: crank, s_i: [0, 0], s_j: [-0.05, 0]}
      - {type: RelativeAngleDriver, name: motor, i: ground, j: crank,
         f: {type: Linear, slope: 2.0}}
      - {type: Translational, name: P, i: block, j: ground, s_i: [0, 0], s_j: [0, 0], v: [0, 1]}
      - {type: Force, name: push, body: block, s: [0, 0], f: [1.5, 0.0]}
      - {type: Torque, name: tq, body: crank, tau: {type: Constant, value: 0.25}}
      - {type: Gravity, g: [0.0, -9.81]}
    """
    import yaml

    loaded = _io.from_dict(yaml.safe_load(text))
    m = mb.Mechanism()
    crank = m.body("crank", 1.0, 0.01, (0.05, 0.0, 0.0))
    block = m.body("block", 2.0, 0.02)
    m.add(mb.Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=(-0.05, 0.0)))
    m.add(mb.RelativeAngleDriver("motor", m.ground, crank, f=drive.Linear(2.0)))
    m.add(mb.Translational("P", block, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.Force("push", block, s=(0.0, 0.0), f=(1.5, 0.0)))
    m.add(mb.Torque("tq", crank, tau=0.25))
    m.add(mb.Gravity((0.0, -9.81)))
    assert _io.to_dict(loaded) == _io.to_dict(m.build())


def test_offset_drive():
    """drive.Offset(base, delta)(t) = base + delta(t), with delta = Harmonic: closed form and its
    derivative -amplitude omega sin(omega t + phase); a plain constant delta is a Constant."""
    f = drive.Offset(0.7, drive.Harmonic(0.3, 2.0, 0.1, -0.2))
    t = np.linspace(0.0, 3.0, 7)
    np.testing.assert_allclose(
        jax.vmap(f)(t), 0.7 - 0.2 + 0.3 * np.cos(2.0 * t + 0.1), rtol=0, atol=ALGEBRA_TOL
    )
    np.testing.assert_allclose(
        jax.vmap(jax.grad(f))(t), -0.6 * np.sin(2.0 * t + 0.1), rtol=0, atol=ALGEBRA_TOL
    )
    g = drive.Offset(1.0, 0.5)
    assert isinstance(g.delta, drive.Constant) and float(g(2.0)) == 1.5


def test_docs_cover_every_type_and_field():
    """docs/model_files.md has a table row for every element and drive type naming each of its
    fields, and its YAML example loads (the model the text describes: 5 pairs, 2 forces)."""
    import yaml

    with open(os.path.join(ROOT, "docs", "model_files.md"), encoding="utf-8") as fh:
        text = fh.read()
    for registry in (_io.ELEMENT_TYPES, _io.DRIVE_TYPES):
        for name, cls in registry.items():
            row = re.search(rf"^\| `{name}` \|(.*)$", text, re.M)
            assert row, name
            for field in _io._fields(cls):
                assert field.name == "name" or f"`{field.name}`" in row.group(1), (name, field)
    model = _io.from_dict(yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S).group(1)))
    assert model.pair_names == ("O", "A", "B", "P", "motor")
    assert [type(f) for f in model.force_elements] == [mb.SpringDamper, mb.Gravity]


# ----- schema errors ------------------------------------------------------------------------------
BASE = {
    "jaxmb_model": 1,
    "bodies": [
        {"name": "crank", "mass": 1.0, "inertia": 0.01, "q": [0.05, 0.0, 0.0]},
        {"name": "wheel", "mass": 2.0, "inertia": 0.02, "q": [0.3, 0.0, 0.0]},
    ],
    "elements": [
        {
            "type": "Revolute",
            "name": "O",
            "i": "ground",
            "j": "crank",
            "s_i": [0.0, 0.0],
            "s_j": [-0.05, 0.0],
        },
        {
            "type": "Revolute",
            "name": "O2",
            "i": "ground",
            "j": "wheel",
            "s_i": [0.3, 0.0],
            "s_j": [0.0, 0.0],
        },
        {"type": "Gear", "name": "J7", "i": "crank", "j": "wheel", "ratio": -2.0, "offset": 0.0},
        {
            "type": "RelativeAngleDriver",
            "name": "motor",
            "i": "ground",
            "j": "crank",
            "f": {"type": "Linear", "slope": 2.0},
        },
        {"type": "AbsoluteDriver", "name": "lock", "body": "wheel", "coordinate": 1, "f": 0.0},
        {"type": "Gravity", "g": [0.0, -9.81]},
    ],
}


def _with(path, value):
    """BASE with the entry at `path` (a tuple of keys) replaced; value None deletes it."""
    data = copy.deepcopy(BASE)
    *parents, last = path
    target = data
    for key in parents:
        target = target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return data


def _renamed(k, old, new):
    data = copy.deepcopy(BASE)
    data["elements"][k][new] = data["elements"][k].pop(old)
    return data


def test_base_data_is_valid():
    """The data the error cases mutate builds (so each error below comes from its mutation)."""
    model = _io.from_dict(BASE)
    assert model.pair_names == ("O", "O2", "J7", "motor", "lock") and model.n == 6


ERRORS = {
    "unknown key": (
        _renamed(2, "offset", "offest"),
        "elements[2] (Gear 'J7'): unknown key 'offest' (did you mean 'offset'?)",
    ),
    "missing field": (
        _with(("elements", 0, "s_j"), None),
        "elements[0] (Revolute 'O'): missing field 's_j'",
    ),
    "unknown element type": (
        _with(("elements", 0, "type"), "Revolut"),
        "elements[0]: unknown element type 'Revolut' (did you mean 'Revolute'?)",
    ),
    "undefined body": (
        _with(("elements", 2, "j"), "whel"),
        "elements[2] (Gear 'J7'): j: unknown body 'whel' (did you mean 'wheel'?)",
    ),
    "vector length": (
        _with(("elements", 0, "s_j"), [-0.05, 0.0, 0.0]),
        "elements[0] (Revolute 'O'): s_j must be a 2-vector, got shape (3,)",
    ),
    "body q length": (
        _with(("bodies", 1, "q"), [0.3, 0.0]),
        "bodies[1] ('wheel'): q must be [x, y, phi] (3 numbers), got [0.3, 0.0]",
    ),
    "non-numeric mass": (
        _with(("bodies", 0, "mass"), "heavy"),
        "bodies[0] ('crank'): mass must be a number",
    ),
    "non-numeric vector entry": (
        _with(("elements", 0, "s_i"), [0.0, "zero"]),
        "elements[0] (Revolute 'O'): s_i must be a number or a list of numbers, got [0.0, 'zero']",
    ),
    "boolean parameter": (
        _with(("elements", 2, "ratio"), True),
        "elements[2] (Gear 'J7'): ratio must be a number or a list of numbers, got True",
    ),
    "ragged list": (
        _with(("elements", 0, "s_i"), [[0.0, 0.0], [1.0]]),
        "elements[0] (Revolute 'O'): s_i must be a regular (not ragged) list of numbers",
    ),
    "scalar given a vector": (
        _with(("elements", 2, "ratio"), [1.0, 2.0]),
        "elements[2] (Gear 'J7'): ratio must be a scalar, got shape (2,)",
    ),
    "integer field": (
        _with(("elements", 4, "coordinate"), 1.0),
        "elements[4] (AbsoluteDriver 'lock'): coordinate must be an integer, got 1.0",
    ),
    "element check": (
        _with(("elements", 4, "coordinate"), 3),
        "elements[4] (AbsoluteDriver 'lock'): coordinate must be 0 (x), 1 (y) or 2 (phi)",
    ),
    "unknown drive type": (
        _with(("elements", 3, "f", "type"), "Lineer"),
        "elements[3] (RelativeAngleDriver 'motor'): f: unknown drive type 'Lineer' "
        "(did you mean 'Linear'?)",
    ),
    "drive without type": (
        _with(("elements", 3, "f"), {"slope": 2.0}),
        "elements[3] (RelativeAngleDriver 'motor'): f: missing field 'type' (one of",
    ),
    "drive missing field": (
        _with(("elements", 3, "f"), {"type": "Harmonic", "amplitude": 1.0}),
        "elements[3] (RelativeAngleDriver 'motor'): f (Harmonic): missing field 'omega'",
    ),
    "drive unknown key": (
        _with(("elements", 3, "f", "ofset"), 1.0),
        "elements[3] (RelativeAngleDriver 'motor'): f (Linear): unknown key 'ofset' "
        "(did you mean 'offset'?)",
    ),
    "drive check": (
        _with(("elements", 3, "f"), {"type": "Spline", "t": [1.0, 0.0], "values": [0.0, 1.0]}),
        "elements[3] (RelativeAngleDriver 'motor'): f (Spline): knot times t must be strictly "
        "increasing",
    ),
    "duplicate element name": (
        _with(("elements", 1, "name"), "O"),
        "elements[1] (Revolute 'O'): an element named 'O' was already added",
    ),
    "duplicate body name": (
        _with(("bodies", 1, "name"), "crank"),
        "bodies[1] ('crank'): body name 'crank' is already used",
    ),
    "non-positive mass": (
        _with(("bodies", 0, "mass"), -1.0),
        "bodies[0] ('crank'): mass = -1.0 must be positive and finite",
    ),
    "body missing field": (
        _with(("bodies", 1, "inertia"), None),
        "bodies[1]: missing field 'inertia'",
    ),
    "body unknown key": (
        _with(("bodies", 1, "intertia"), 0.1),
        "bodies[1]: unknown key 'intertia' (did you mean 'inertia'?)",
    ),
    "element not a mapping": (
        _with(("elements", 1), "Revolute O2"),
        "elements[1]: expected a mapping",
    ),
    "element without type": (
        _with(("elements", 1, "type"), None),
        "elements[1]: missing field 'type'",
    ),
    "unknown top-level key": (
        _with(("element",), []),
        "unknown top-level key 'element' (did you mean 'elements'?)",
    ),
    "missing version": (_with(("jaxmb_model",), None), "missing key 'jaxmb_model'"),
    "unsupported version": (
        _with(("jaxmb_model",), 2),
        "jaxmb_model: unsupported schema version 2",
    ),
    "no bodies": (_with(("bodies",), []), "bodies: expected a non-empty list of bodies"),
    "initial velocity length": (
        _with(("initial_velocity",), [0.0] * 5),
        "initial_velocity must hold n = 6 numbers (x, y, phi rates of each body), got shape (5,)",
    ),
    "top level not a mapping": ([BASE], "the top level must be a mapping"),
}


@pytest.mark.parametrize("case", list(ERRORS))
def test_schema_error_names_the_entry(case):
    """Each invalid entry raises a ValueError that starts with the entry (index, type and name)
    and says what is wrong."""
    data, message = ERRORS[case]
    with pytest.raises(ValueError) as info:
        _io.from_dict(data)
    assert str(info.value).startswith(message), str(info.value)


def test_file_errors_name_the_file(tmp_path):
    """Errors read from a file are prefixed with the file name; invalid syntax, duplicate keys,
    YAML's exponent-as-text pitfall and a wrong suffix are reported as such."""
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(ERRORS["unknown key"][0]))
    with pytest.raises(
        ValueError,
        match=re.escape(f"model file {str(path)!r}: elements[2] (Gear 'J7'): unknown key 'offest'"),
    ):
        mb.load(path)
    path.write_text('{"jaxmb_model": 1, "bodies": [}')
    with pytest.raises(ValueError, match="bad.json'?: invalid JSON"):
        mb.load(path)
    path.write_text('{"jaxmb_model": 1, "jaxmb_model": 1, "bodies": []}')
    with pytest.raises(ValueError, match="invalid JSON: duplicate key 'jaxmb_model'"):
        mb.load(path)
    yml = tmp_path / "bad.yaml"
    yml.write_text("jaxmb_model: 1\nbodies:\n- {name: a, name: b, mass: 1.0, inertia: 1.0}\n")
    with pytest.raises(ValueError, match="invalid YAML: .*duplicate key 'name'"):
        mb.load(yml)
    yml.write_text("jaxmb_model: 1\nbodies:\n- {name: a, mass: 1e-3, inertia: 1.0}\n")
    with pytest.raises(
        ValueError,
        match=re.escape(
            "bodies[0] ('a'): mass must be a number, got '1e-3' (YAML reads exponents without "
            "a decimal point or a sign as text: write 1.0e-3, 2.0e+7)"
        ),
    ):
        mb.load(yml)
    with pytest.raises(ValueError, match=r"expected a \.json, \.yaml, \.yml file name"):
        mb.save(slider_crank.build(), tmp_path / "model.txt")


class _Ramp(drive.AbstractDrive):
    """A user-defined drive function: not in the schema."""

    rate: float

    def __call__(self, t):
        return self.rate * t


def test_save_refuses_what_a_file_cannot_hold():
    """Foreign drive types, traced and batched models are refused with the element named."""
    m = mb.Mechanism()
    crank = m.body("crank", 1.0, 0.01)
    m.add(mb.RelativeAngleDriver("motor", m.ground, crank, f=_Ramp(2.0)))
    with pytest.raises(
        ValueError, match=re.escape("RelativeAngleDriver 'motor': f: a _Ramp cannot be saved")
    ):
        _io.to_dict(m.build())

    def build(mass):
        m = mb.Mechanism()
        m.body("crank", mass, 0.01)
        return m.build()

    def save_traced(mass):
        _io.to_dict(build(mass))
        return mass

    with pytest.raises(ValueError, match="masses: cannot save a traced value"):
        jax.jit(save_traced)(1.0)
    with pytest.raises(ValueError, match="cannot save a batched model"):
        _io.to_dict(jax.vmap(build)(jnp.array([1.0, 2.0])))


# ----- the command line on model files ------------------------------------------------------------
def _cli(*args):
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.Popen(
        [sys.executable, "-m", "jaxmb.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


@pytest.fixture(scope="module")
def cli_runs(tmp_path_factory):
    """report and simulate on the robot file, one after the other; returns
    ({label: (returncode, stdout, stderr)}, output folder)."""
    out = tmp_path_factory.mktemp("cli")
    commands = {
        "report": ("report", ROBOT_FILE, "--t", str(CLI_REPORT_T), "--stiffness"),
        "file": (
            "simulate",
            ROBOT_FILE,
            "--t1",
            str(CLI_T1),
            "--num-saves",
            str(CLI_SAVES),
            "--out",
            str(out / "file.npz"),
        ),
    }
    results = {}
    for label, args in commands.items():
        proc = _cli(*args)
        outputs = proc.communicate(timeout=600)
        results[label] = (proc.returncode, *outputs)
    return results, out


def test_cli_report_on_model_file(cli_runs):
    """`jaxmb report mobile_robot.yaml` prints seed 001's numbers (at t = 1.2 s, a regular
    configuration in the first turn): rank 20 (17 + 4), p = 2, dof = 21 - 20 = 1, and the
    unique reactions of section 4.2."""
    code, out, err = cli_runs[0]["report"]
    assert code == 0, err
    assert "rank C = 20  (holonomic 17, nonholonomic 4)" in out
    assert "redundancy p = 2, dof = 1" in out
    verdicts = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[0] in "A B C D E F G H driver W1 W2 W3 W4 W5".split():
            verdicts[parts[0]] = parts[1] == "unique"
    assert len(verdicts) == 14
    assert {k for k, v in verdicts.items() if v} == {"A", "D", "E", "F", "G", "H", "driver", "W5"}


def test_cli_report_compliance_table(cli_runs):
    """`jaxmb report mobile_robot.yaml --t 1.2 --stiffness` (the file's `compliance` entry)
    adds each pair's multipliers by Compliance and by the minimum norm: the unique pairs' agree
    (every solution has them), the non-unique ones (B, C, W1-W4) differ, and the rear tyres W3
    and W4 (equal damping, one axle line: equal slip velocity) carry equal lateral forces."""
    code, out, err = cli_runs[0]["report"]
    assert code == 0, err
    rows = {}
    for line in out.split("against the minimum norm", 1)[1].splitlines()[2:]:
        name, verdict, rest = line.split(None, 1)[0], line.split()[1], line.split("]")
        if verdict == "NOT":
            verdict = "NOT unique"
        values = [np.array(part.split("[")[1].split(","), float) for part in rest[:2]]
        rows[name] = (verdict, *values)
    assert len(rows) == 14
    for name, (verdict, physical, other) in rows.items():
        if verdict == "unique":
            np.testing.assert_allclose(physical, other, rtol=1e-3, err_msg=name)  # 4 digits
        else:
            assert name in ("B", "C", "W1", "W2", "W3", "W4")
            assert np.max(np.abs(physical - other)) > 1e-3 * np.max(np.abs(other)), name
    assert rows["W3"][1] == pytest.approx(rows["W4"][1], rel=1e-3)
    assert abs(rows["W3"][1][0]) > 1e-3


def test_cli_stiffness_errors(tmp_path):
    """`jaxmb report MODEL --stiffness` on a model without a `compliance` entry, and with a bad
    stiffness file: one-line errors naming the problem, before any computation."""
    from jaxmb import cli

    with pytest.raises(
        SystemExit,
        match="--stiffness: model 'parallelogram' has no 'compliance' entry; pass a stiffness file",
    ):
        cli.main(["report", "parallelogram", "--stiffness"])
    bad = tmp_path / "k.yaml"
    bad.write_text("stiffness: {O9: 1.0}\ndefault: 1.0\n")
    with pytest.raises(
        SystemExit,
        match=re.escape(f"jaxmb: stiffness file {str(bad)!r}: stiffness: unknown pair 'O9'"),
    ):
        cli.main(["report", "parallelogram", "--stiffness", str(bad)])


def test_cli_simulate_model_file(cli_runs):
    """`jaxmb simulate mobile_robot.yaml` writes the robot's run: it starts at the built-in q0
    (to 1e-12), keeps the position constraints (|Phi| < 1e-8, Baumgarte at rtol 1e-8) and the
    nonholonomic ones (|C qd + b| < 1e-8) at every saved instant, and moves at seed 001's 0.1 m/s.
    The file holds exactly the built-in model and initial velocity
    (test_example_files_are_the_builtin_models: equal dictionaries), so a second CLI run on the
    built-in name would only repeat the same computation (it was dropped to save a compilation)."""
    results, out = cli_runs
    assert results["file"][0] == 0, results["file"][2]
    got = np.load(out / "file.npz")
    assert got["q"].shape == (CLI_SAVES, 21)
    np.testing.assert_allclose(got["ts"], np.linspace(0.0, CLI_T1, CLI_SAVES), rtol=0, atol=1e-15)
    model = mobile_robot.build()
    np.testing.assert_allclose(got["q"][0], model.q0, rtol=0, atol=ALGEBRA_TOL)
    residuals = jax.jit(
        jax.vmap(lambda q, qd, t: (model.phi(q, t), model.velocity_residual(q, qd, t)))
    )
    phi, g = residuals(got["q"], got["qd"], got["ts"])
    assert float(jnp.max(jnp.abs(phi))) < 1e-8 and float(jnp.max(jnp.abs(g))) < 1e-8
    dx = got["q"][-1, 0] - got["q"][0, 0]
    assert 0.05 < dx <= 0.1 * CLI_T1 + 1e-9  # 0.1 m/s forward, less once the steering starts


def test_cli_bad_model_file_is_one_line(tmp_path):
    """A model file with a bad entry: exit code != 0 and one stderr line naming file and entry."""
    import yaml

    path = tmp_path / "robot.yaml"
    data = yaml.safe_load(open(ROBOT_FILE))
    data["elements"][7]["offest"] = data["elements"][7].pop("angle")
    path.write_text(yaml.safe_dump(data))
    proc = _cli("report", str(path))
    _, err = proc.communicate(timeout=600)
    assert proc.returncode != 0
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(
        f"jaxmb: model file {str(path)!r}: elements[7] (Translational 'H'): unknown key 'offest'"
    ), err
