"""Bad input never passes silently (issue #7, item 5): one test per class of bad input.

Each test injects one known defect and asserts that the error is raised and that its message
names the element (body, pair, force element, argument entry or file entry) and the problem.
The reference for every check is the defect itself: the test knows which entry it broke, and
where a number is part of the message (a time, a worst pair) it is derived independently in
the docstring.

Classes covered:

 1. unknown body handle (a name string, or a handle the mechanism never issued)
 2. foreign body handle (from another Mechanism)
 3. duplicate names (bodies, elements)
 4. zero or negative mass or inertia
 5. non-finite mass or inertia
 6. non-finite vectors at build time (attachment points, gravity, body q)
 7. wrongly shaped vectors and scalars at build time
 8. non-finite vectors inside jit, where the value is traced
 9. non-positive mass inside jit, where the value is traced
10. zero-length directions and normals
11. a pair joining a body to itself
12. a drive function returning the wrong shape (drivers, forces, torques)
13. non-finite drive parameters at build time
14. an initial configuration off the constraints (message suggests assemble)
15. an inconsistent initial velocity (message suggests consistent_velocity)
16. a non-finite state passed to an analysis (simulate, assemble)
17. a wrongly shaped state passed to an analysis (simulate, assemble, accelerations, reactions)
18. contradictory constraints (assemble)
19. a singular configuration reached during a run (result code, time, message)
20. step-size collapse during a run (result code, time, message)
21. non-finite applied forces (at the initial state, and reached during a run)
22. an Eliminate row index out of range
23. Eliminate rows that leave the system singular
24. an Eliminate row listed twice
25. a model file with an unknown key or a missing field
26. an unknown analysis method or formulation
"""

import dataclasses
import functools as ft
import json
import re
import time

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmb as mb

L = 0.5  # pendulum length (m)


def _chain():
    """Two bodies on the x axis: 'b1' pinned to ground at the origin ('O'), 'b2' pinned to b1
    ('B'); 6 coordinates, 4 holonomic rows, 2 degrees of freedom."""
    m = mb.Mechanism()
    b1 = m.body("b1", mass=1.0, inertia=0.02, q=(0.5, 0.0, 0.0))
    b2 = m.body("b2", mass=2.0, inertia=0.04, q=(1.5, 0.0, 0.0))
    m.add(mb.Revolute("O", m.ground, b1, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    m.add(mb.Revolute("B", b1, b2, s_i=(0.5, 0.0), s_j=(-0.5, 0.0)))
    return m, b1, b2


@pytest.fixture(scope="module")
def chain_model():
    m, _, _ = _chain()
    m.add(mb.Gravity((0.0, -9.81)))
    return m.build()


# ------------------------------------------------------------------------------------------
# build time: bodies, handles, names
# ------------------------------------------------------------------------------------------
def test_unknown_body_handle():
    """A body name given where a handle is expected, or a handle this mechanism never issued
    (a forged copy of a real one), is refused naming the element and the body."""
    m, b1, b2 = _chain()
    with pytest.raises(
        ValueError, match="Distance 'D': its first body must be a body handle.*got 'b1' of type str"
    ):
        mb.Distance("D", "b1", b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0), length=1.0)
    with pytest.raises(ValueError, match="Torque 'T': body must be a body handle.*got 'b2'"):
        mb.Torque("T", "b2", 1.0)
    ghost = dataclasses.replace(b2, name="ghost", index=7)
    with pytest.raises(
        ValueError,
        match="Revolute 'R': body 'ghost' is unknown to this "
        r"Mechanism; its bodies are \['b1', 'b2'\]",
    ):
        m.add(mb.Revolute("R", b1, ghost, s_i=(0.0, 0.0), s_j=(0.0, 0.0)))
    assert m.build().pair_names == ("O", "B")  # nothing was added


def test_foreign_body_handle():
    """A handle issued by another Mechanism is refused when the element is added."""
    m, b1, _ = _chain()
    other = mb.Mechanism()
    stranger = other.body("stranger", mass=1.0, inertia=1.0)
    with pytest.raises(ValueError, match="Weld 'W': body 'stranger' belongs to another"):
        m.add(mb.Weld("W", b1, stranger))


def test_duplicate_names():
    """A second body or element with a used name is refused; the message names it."""
    m, b1, b2 = _chain()
    with pytest.raises(ValueError, match="body name 'b2' is already used"):
        m.body("b2", mass=1.0, inertia=1.0)
    with pytest.raises(ValueError, match="an element named 'B' was already added"):
        m.add(
            mb.SpringDamper(
                "B",
                b1,
                b2,
                s_i=(0.0, 0.0),
                s_j=(0.0, 0.0),
                stiffness=1.0,
                damping=0.0,
                free_length=1.0,
            )
        )


@pytest.mark.parametrize(
    "label,value", [("mass", 0.0), ("mass", -2.0), ("inertia", 0.0), ("inertia", -1e-3)]
)
def test_non_positive_mass_or_inertia(label, value):
    """Zero or negative mass / inertia names the body, the field and the value."""
    m = mb.Mechanism()
    with pytest.raises(ValueError, match=f"body 'arm': {label} = {value} must be positive"):
        m.body("arm", **{"mass": 1.0, "inertia": 1.0, label: value})


@pytest.mark.parametrize("label,value", [("mass", np.inf), ("inertia", np.nan)])
def test_non_finite_mass_or_inertia(label, value):
    """Infinite or nan mass / inertia names the body and the field."""
    m = mb.Mechanism()
    with pytest.raises(ValueError, match=f"body 'arm': {label} = {value} must be .*finite"):
        m.body("arm", **{"mass": 1.0, "inertia": 1.0, label: value})


def test_non_finite_vectors_at_build():
    """Non-finite attachment points, gravity and body coordinates name the element / body and
    the field."""
    m, b1, b2 = _chain()
    with pytest.raises(ValueError, match=r"PinInSlot 'P': s_j = \[0.0, nan\] is not finite"):
        mb.PinInSlot("P", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, np.nan), a_i=(1.0, 0.0))
    with pytest.raises(ValueError, match=r"Gravity 'gravity': g = \[0.0, -inf\] is not finite"):
        mb.Gravity((0.0, -np.inf))
    with pytest.raises(ValueError, match=r"body 'b3': q = \[0.0, nan, 0.0\] is not finite"):
        m.body("b3", mass=1.0, inertia=1.0, q=(0.0, np.nan, 0.0))


def test_wrongly_shaped_values_at_build():
    """Vectors and scalars of the wrong shape name the element / body, the field and the
    shape."""
    m, b1, b2 = _chain()
    with pytest.raises(
        ValueError,
        match=r"Revolute 'R': s_j must be a 2-vector, got shape "
        r"\(3,\)",
    ):
        mb.Revolute("R", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0, 0.0))
    with pytest.raises(
        ValueError,
        match=r"Distance 'D': length must be a scalar, got shape "
        r"\(2,\)",
    ):
        mb.Distance("D", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0), length=(1.0, 1.0))
    with pytest.raises(ValueError, match=r"body 'b3': q must be \(x, y, phi\), got shape \(2,\)"):
        m.body("b3", mass=1.0, inertia=1.0, q=(0.0, 0.0))
    with pytest.raises(ValueError, match="body 'b3': inertia must be a scalar"):
        m.body("b3", mass=1.0, inertia=jnp.ones(3))


def _built_under_jit(s_x, mass):
    """Chain model built from traced parameters: the x of O's ground point and b2's mass."""
    m = mb.Mechanism()
    b1 = m.body("b1", mass=1.0, inertia=0.02, q=(0.5, 0.0, 0.0))
    b2 = m.body("b2", mass=mass, inertia=0.04, q=(1.5, 0.0, 0.0))
    m.add(mb.Revolute("O", m.ground, b1, s_i=jnp.stack([s_x, 0.0]), s_j=(-0.5, 0.0)))
    m.add(mb.Revolute("B", b1, b2, s_i=(0.5, 0.0), s_j=(-0.5, 0.0)))
    model = m.build()
    return model.phi(model.q0), model.mass_matrix()


_phi_and_mass = eqx.filter_jit(_built_under_jit)


def test_non_finite_traced_vector_inside_jit():
    """Under jit the build-time checks see tracers; a nan that reaches a vector field is caught
    when the model runs, naming the element and the field. Control: finite values give
    Phi(q0) = 0 and M = diag(1, 1, 0.02, 2, 2, 0.04) (the chain's own data)."""
    phi, M = _phi_and_mass(jnp.asarray(0.0), jnp.asarray(2.0))
    np.testing.assert_allclose(phi, 0.0, atol=1e-15)
    np.testing.assert_array_equal(np.diag(M), [1.0, 1.0, 0.02, 2.0, 2.0, 0.04])
    with pytest.raises(RuntimeError, match=r"Revolute 'O': s_i is not finite \(traced value\)"):
        _phi_and_mass(jnp.asarray(np.nan), jnp.asarray(2.0))


def test_non_positive_traced_mass_inside_jit():
    """Under jit a zero or negative traced mass is caught when the model runs, naming the body
    (the same compiled function as the test above: only values change)."""
    with pytest.raises(RuntimeError, match="body 'b2': mass must be positive and finite"):
        _phi_and_mass(jnp.asarray(0.0), jnp.asarray(-2.0))


def test_zero_length_directions():
    """Zero directions (sliding normal, knife-edge normal, driver axis) name the field."""
    _, b1, b2 = _chain()
    with pytest.raises(ValueError, match="Translational 'T': v has zero length"):
        mb.Translational("T", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 0.0))
    with pytest.raises(ValueError, match="KnifeEdge 'K': n has zero length"):
        mb.KnifeEdge("K", b2, s=(0.0, 0.0), n=(0.0, 0.0))
    with pytest.raises(ValueError, match="TranslationalDriver 'D': u has zero length"):
        mb.TranslationalDriver("D", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0), u=(0.0, 0.0), d=0.0)


def test_pair_joining_a_body_to_itself():
    """A pair (or gear on a link, or spring) between a body and itself names the body."""
    _, b1, b2 = _chain()
    with pytest.raises(ValueError, match="Weld 'W': joins body 'b1' to itself"):
        mb.Weld("W", b1, b1)
    with pytest.raises(ValueError, match="GearOnLink 'G': joins body 'b2' to itself"):
        mb.GearOnLink("G", b2, b1, b2, ratio=2.0)
    with pytest.raises(ValueError, match="RotationalSpringDamper 'S': joins body 'b1'"):
        mb.RotationalSpringDamper("S", b1, b1, stiffness=1.0, damping=0.0)


def test_drive_function_with_wrong_shape():
    """A drive function whose value has the wrong shape is refused when the element is made,
    found from the function's output shape (jax.eval_shape) and naming the element."""
    m, b1, b2 = _chain()
    with pytest.raises(
        ValueError,
        match=r"RelativeAngleDriver 'motor': f is a Linear "
        r"returning shape \(2,\); it must return a scalar",
    ):
        mb.RelativeAngleDriver("motor", m.ground, b1, f=mb.drive.Linear(slope=(1.0, 2.0)))
    with pytest.raises(
        ValueError,
        match=r"AbsoluteDriver 'x': f is a Constant returning shape "
        r"\(3,\)",
    ):
        mb.AbsoluteDriver("x", b2, 0, f=(0.0, 1.0, 2.0))
    with pytest.raises(
        ValueError,
        match=r"Force 'F': f is a Harmonic returning shape \(\); "
        r"it must return shape \(2,\)",
    ):
        mb.Force("F", b2, s=(0.0, 0.0), f=mb.drive.Harmonic(1.0, 2.0))
    with pytest.raises(
        ValueError,
        match=r"Torque 'T': tau is a Constant returning shape "
        r"\(2,\)",
    ):
        mb.Torque("T", b1, mb.drive.Constant(jnp.ones(2)))


def test_non_finite_drive_parameters_at_build():
    """A drive function (or constant load) with non-finite parameters names the element."""
    m, b1, _ = _chain()
    with pytest.raises(
        ValueError,
        match=r"Torque 'T': tau \(Constant\) has a non-finite "
        "parameter inf",
    ):
        mb.Torque("T", b1, np.inf)
    with pytest.raises(
        ValueError,
        match=r"RelativeAngleDriver 'motor': f \(Linear\) has a "
        "non-finite parameter nan",
    ):
        mb.RelativeAngleDriver("motor", m.ground, b1, f=mb.drive.Linear(np.nan))


# ------------------------------------------------------------------------------------------
# analyses: states, constraints
# ------------------------------------------------------------------------------------------
def test_initial_configuration_off_the_constraints(chain_model):
    """simulate refuses a q0 with Phi != 0, names the violated pair and suggests assemble.
    Only b2 is moved (by 1 mm in y), so only pair B (b1-b2) is violated: |Phi_B| = 1e-3."""
    q0 = chain_model.q0.at[4].add(1e-3)
    with pytest.raises(RuntimeError, match="position constraints of pair 'B'.*mb.assemble"):
        mb.simulate(chain_model, q0, jnp.zeros(6), 0.1)


def test_inconsistent_initial_velocity(chain_model):
    """simulate refuses a qd0 with C qd0 + b != 0, naming the violated pair and suggesting
    consistent_velocity. A vertical velocity of b2's centre alone, ydot_2 = 1, keeps O
    satisfied (b1 at rest) and breaks B (the joint point of b2 moves, b1's does not)."""
    qd0 = jnp.zeros(6).at[4].set(1.0)
    with pytest.raises(
        RuntimeError,
        match="velocity constraints C qd \\+ b = 0 of pair 'B'.*mb.consistent_velocity",
    ):
        mb.simulate(chain_model, chain_model.q0, qd0, 0.1)


def test_non_finite_state(chain_model):
    """A nan or inf in a state vector names the argument, the entry, the body and the
    component (entry 4 is y of the second body, entry 2 phi of the first)."""
    with pytest.raises(RuntimeError, match=r"simulate: q0\[4\] \(y of body 'b2'\) is not finite"):
        mb.simulate(chain_model, chain_model.q0.at[4].set(np.nan), jnp.zeros(6), 0.1)
    with pytest.raises(RuntimeError, match=r"simulate: qd0\[2\] \(phi of body 'b1'\) is not"):
        mb.simulate(chain_model, chain_model.q0, jnp.zeros(6).at[2].set(np.inf), 0.1)
    with pytest.raises(RuntimeError, match=r"assemble: q\[4\] \(y of body 'b2'\) is not finite"):
        mb.assemble(chain_model, chain_model.q0.at[4].set(np.nan))


def test_wrongly_shaped_state(chain_model):
    """A state of the wrong length names the function, the argument, n and the bodies."""
    q5, z6 = chain_model.q0[:5], jnp.zeros(6)
    shape = r"must have shape \(n,\) = \(6,\).*\['b1', 'b2'\]; got shape \(5,\)"
    with pytest.raises(ValueError, match="simulate: q0 " + shape):
        mb.simulate(chain_model, q5, z6, 0.1)
    with pytest.raises(ValueError, match="assemble: q " + shape):
        mb.assemble(chain_model, q5)
    with pytest.raises(ValueError, match="accelerations: qd " + shape):
        mb.accelerations(chain_model, chain_model.q0, z6[:5])
    with pytest.raises(ValueError, match="reactions: q " + shape):
        mb.reactions(chain_model, q5, z6)


def test_contradictory_constraints():
    """Constraints that no configuration satisfies: b1 pinned at the origin ('O': x = 0) and
    held there ('hold': x = 0), while 'push' demands x = 1. The least-squares compromise is
    x = 1/3, leaving residuals 1/3, 1/3 and 2/3, so assemble names 'push'."""
    m = mb.Mechanism()
    b1 = m.body("b1", mass=1.0, inertia=0.1)
    m.add(mb.Revolute("O", m.ground, b1, s_i=(0.0, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.AbsoluteDriver("hold", b1, 0, f=0.0))
    m.add(mb.AbsoluteDriver("push", b1, 0, f=1.0))
    with pytest.raises(
        RuntimeError,
        match="assemble: no configuration satisfies the "
        "constraints; pair 'push' keeps the largest residual",
    ):
        mb.assemble(m.build())


# ------------------------------------------------------------------------------------------
# failures during a run
# ------------------------------------------------------------------------------------------
def _pushed_pendulum(speed=1.0):
    """A pendulum of length L hanging from a ground pin ('pin'), its centre driven along x at
    constant speed ('push': x = speed t). At x = L (t* = L / speed) the centre is level with
    the pin: the pin's x row [1, 0, -L cos(phi)] becomes [1, 0, 0], the push row, so C loses
    rank and the centre's y velocity x xdot / sqrt(L^2 - x^2) is unbounded. Returns the model
    and its consistent initial velocity."""
    m = mb.Mechanism()
    bob = m.body("bob", mass=1.0, inertia=0.01, q=(0.0, -L, 0.0))
    m.add(mb.Revolute("pin", m.ground, bob, s_i=(0.0, 0.0), s_j=(0.0, L)))
    m.add(mb.AbsoluteDriver("push", bob, 0, f=mb.drive.Linear(speed)))
    model = m.build()
    # x = L sin(phi), y = -L cos(phi): at phi = 0, xdot = speed gives phidot = speed / L, ydot = 0
    return model, jnp.array([speed, 0.0, speed / L])


TS = jnp.linspace(0.0, 1.0, 11)


@eqx.filter_jit
def _run_quietly(model, q0, qd0):
    return mb.simulate(model, q0, qd0, 1.0, ts=TS, throw=False)


def test_singular_configuration_during_run():
    """A run reaching a singular configuration stops with diffrax's dt_min_reached result,
    `singular` set, and t_stop = t* = L / speed = 0.5 s (closed form, see `_pushed_pendulum`);
    saved states before t* are finite and those after are inf. With throw=True (eager) the
    message gives the time and both pairs whose rows become dependent."""
    model, qd0 = _pushed_pendulum()
    traj = _run_quietly(model, model.q0, qd0)
    assert traj.result == mb.RESULTS.dt_min_reached
    assert bool(traj.singular)
    np.testing.assert_allclose(traj.t_stop, L / 1.0, atol=1e-6)
    before = np.asarray(TS) <= float(traj.t_stop)
    assert np.all(np.isfinite(traj.q[before])) and np.all(np.isinf(traj.q[~before]))
    np.testing.assert_allclose(traj.q[before, 0], TS[before], atol=1e-6)  # x = speed t
    with pytest.raises(
        RuntimeError,
        match=r"singular configuration was reached at "
        r"t = 0\.50000000\d*: .*pairs involved: "
        r"\['pin', 'push'\]",
    ):
        mb.simulate(model, model.q0, qd0, 1.0, ts=TS)


class _Spike(mb.drive.AbstractDrive):
    """Torque that breaks at t_star: scale / (t_star - t) (unbounded, poisoned = 0), or 0
    before t_star and nan from it on (poisoned = 1). Both share one compiled simulate."""

    t_star: jax.Array
    poisoned: jax.Array

    def __call__(self, t):
        nan_after = jnp.where(t < self.t_star, 0.0, jnp.nan)
        return jnp.where(self.poisoned > 0.5, nan_after, 1.0 / (self.t_star - t))


def _spun_disc(t_star, poisoned):
    """One free body (no constraints) driven by the torque `_Spike` ('spike')."""
    m = mb.Mechanism()
    disc = m.body("disc", mass=1.0, inertia=0.5)
    m.add(mb.Torque("spike", disc, _Spike(jnp.asarray(t_star), jnp.asarray(poisoned))))
    return m.build()


@eqx.filter_jit
def _run_loudly(model):
    return mb.simulate(model, model.q0, jnp.zeros(3), 1.0, ts=TS).q


def test_step_size_collapse():
    """A torque unbounded at t* = 0.3 s makes the steps shrink to dtmin; the error (raised
    inside jit) names the collapse and the force element that changes fastest there. (The
    result code and t_stop of a failed run are checked in the singular test above.)"""
    model = _spun_disc(0.3, 0.0)
    with pytest.raises(
        RuntimeError,
        match=r"step size collapsed \(below dtmin.*changing "
        "fastest there is Torque 'spike'",
    ):
        _run_loudly(model)


def test_nan_start_inside_jit_is_refused_before_integrating():
    """Inside jit with throw=True a nan q0 used to be integrated until max_steps (200,000
    rejected steps: 1.1 s for this disc, 253 s for the N = 30 four-bar) before its error came;
    it is now refused at the start, as eagerly and with throw=False. The disc of
    `_spun_disc` (torque 1 / (10 - t), finite on [0, 1]) shares `_run_loudly`'s program (the
    model's q0 replaced: built, a nan q0 is refused at once)."""
    model = _spun_disc(10.0, 0.0)
    _run_loudly(model)  # compiled (or from the test above), and a control: it runs
    bad = eqx.tree_at(lambda m: m.q0, model, jnp.array([np.nan, 0.0, 0.0]))
    start = time.perf_counter()
    with pytest.raises(RuntimeError, match=re.escape("q0[0] (x of body 'disc') is not finite")):
        _run_loudly(bad)
    assert time.perf_counter() - start < 0.5  # 1.1 s before (max_steps reached)


def test_non_finite_applied_forces():
    """A torque that turns nan at t = 0.3 s (finite before) is named when the run stops there;
    one that is nan already at t0 is named before integrating."""
    with pytest.raises(
        RuntimeError,
        match="applied force of Torque 'spike' is not finite where the integration stopped",
    ):
        _run_loudly(_spun_disc(0.3, 1.0))
    with pytest.raises(
        RuntimeError,
        match=r"applied force of Torque 'spike' is not finite at "
        r"the initial state \(t0\)",
    ):
        mb.simulate(_spun_disc(0.0, 1.0), jnp.zeros(3), jnp.zeros(3), 1.0)


# ------------------------------------------------------------------------------------------
# Eliminate, options, files
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def doubled_pin():
    """b1 pinned to ground twice at the same point ('O', 'O2'): 4 rows, rank 2, p = 2."""
    m = mb.Mechanism()
    b1 = m.body("b1", mass=1.0, inertia=0.1, q=(0.5, 0.0, 0.0))
    m.add(mb.Revolute("O", m.ground, b1, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    m.add(mb.Revolute("O2", m.ground, b1, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    return m.build()


_reactions = eqx.filter_jit(mb.reactions)


def test_eliminate_row_out_of_range(doubled_pin):
    """A row index outside 0..m+h-1 names the row and the valid range (at trace time)."""
    with pytest.raises(
        ValueError,
        match=r"Eliminate: row 4 is out of range; C has 4 rows "
        r"\(0..3\)",
    ):
        _reactions(doubled_pin, doubled_pin.q0, jnp.zeros(3), method=mb.Eliminate((1, 4)))


def test_eliminate_rows_leaving_a_singular_system(doubled_pin):
    """Dropping one row where p = 2 leaves rows 1 and 3 (the y rows of O and O2, identical)
    in the reduced system, which is singular: the error names the method with its rows. The
    removable sets are pairs with one x row (0 or 2) and one y row (1 or 3); solvability
    finds one of them."""
    assert eqx.filter_jit(mb.solvability)(doubled_pin, doubled_pin.q0).redundant_rows in {
        (0, 1),
        (0, 3),
        (1, 2),
        (2, 3),
    }
    # both checks fail here (one row dropped where p = 2, and the reduced system is singular):
    # whichever is reported first, it names the method with its rows
    either = (
        r"reactions\(method=Eliminate\(rows=\(0,\)\)\): (the remaining rows leave a "
        r"singular|the eliminated rows are not a removable set)"
    )
    with pytest.raises(RuntimeError, match=either):
        _reactions(doubled_pin, doubled_pin.q0, jnp.zeros(3), method=mb.Eliminate((0,)))
    # eager: the compiled program is shared by all rows, the message still names them and
    # adds the rows that would work
    with pytest.raises(RuntimeError, match=either) as err:
        mb.reactions(doubled_pin, doubled_pin.q0, jnp.zeros(3), method=mb.Eliminate((0,)))
    assert "removable set at this state" in str(err.value) or "singular" in str(err.value)


def test_eliminate_row_listed_twice():
    """A row listed twice is refused when the Eliminate is made, naming the row."""
    with pytest.raises(ValueError, match=r"Eliminate: row\(s\) \[5\] listed more than once"):
        mb.Eliminate((5, 20, 5))


def _write(tmp_path, data):
    path = tmp_path / "model.json"
    path.write_text(json.dumps(data))
    return path


_FILE = {
    "jaxmb_model": 1,
    "bodies": [{"name": "crank", "mass": 1.0, "inertia": 0.01, "q": [0.05, 0.0, 0.0]}],
    "elements": [
        {
            "type": "Revolute",
            "name": "O",
            "i": "ground",
            "j": "crank",
            "s_i": [0.0, 0.0],
            "s_j": [-0.05, 0.0],
        }
    ],
}


def test_model_file_with_unknown_key_or_missing_field(tmp_path):
    """mb.load names the file, the entry and the key; control: the intact file loads."""
    assert mb.load(_write(tmp_path, _FILE)).pair_names == ("O",)
    typo = json.loads(json.dumps(_FILE))
    typo["elements"][0]["s_jj"] = typo["elements"][0].pop("s_j")
    with pytest.raises(
        ValueError,
        match=r"model\.json.*elements\[0\] \(Revolute 'O'\): "
        "unknown key 's_jj'",
    ):
        mb.load(_write(tmp_path, typo))
    missing = json.loads(json.dumps(_FILE))
    del missing["bodies"][0]["inertia"]
    with pytest.raises(ValueError, match=r"model\.json.*bodies\[0\].*missing field 'inertia'"):
        mb.load(_write(tmp_path, missing))


def test_unknown_method_or_formulation(chain_model):
    """Unknown option strings name the function and list the accepted values."""
    with pytest.raises(
        ValueError, match="solvability: method must be 'qr', 'svd', 'rank' or 'sparse', got 'lu'"
    ):
        mb.solvability(chain_model, chain_model.q0, method="lu")
    with pytest.raises(
        ValueError, match="reactions: method must be 'min_norm', 'auto'.*got 'pinv'"
    ):
        mb.reactions(chain_model, chain_model.q0, jnp.zeros(6), method="pinv")
    with pytest.raises(ValueError, match="statics: method must be 'min_norm', 'auto'.*got 'pinv'"):
        mb.statics(chain_model, chain_model.q0, method="pinv")
    with pytest.raises(
        ValueError, match="inverse_dynamics: method must be 'min_norm', 'auto'.*got 'pinv'"
    ):
        mb.inverse_dynamics(chain_model, jnp.linspace(0.0, 0.1, 3), method="pinv")
    with pytest.raises(ValueError, match="simulate: formulation must be .*got 'lagrange'"):
        mb.simulate(chain_model, chain_model.q0, jnp.zeros(6), 0.1, formulation="lagrange")


# ------------------------------------------------------------------------------------------
# issue 18, item 3: bad input that used to give a silent wrong answer or a late, raw error
# ------------------------------------------------------------------------------------------
def test_eliminate_requires_a_removable_set(chain_model, doubled_pin):
    """The chain is not redundant (4 independent rows, p = 0): eliminating rows 0 and 1 (pin
    O) used to drop a real constraint and return a wrong qdd silently. Now reactions refuse
    it (naming rank 4, p = 0 and that no row is redundant; under jit the test of the doubled
    pin above), and simulate refuses the formulation at q0. Control: a removable set of the
    doubled pin (p = 2, one x and one y row) gives the null-space accelerations (an
    independent formulation, seed 001 eq. 13) to 1e-12 and zero multipliers on the
    eliminated rows."""
    q, qd = chain_model.q0, jnp.zeros(6)
    problem = (
        r"(?s)Eliminate\(rows=\(0, 1\)\)\): the eliminated rows are not a removable set "
        r"at this configuration: C has rank 4 here, so exactly p = 0 row\(s\)"
    )
    with pytest.raises(RuntimeError, match=problem + ".*No row is redundant at this state"):
        mb.reactions(chain_model, q, qd, method=mb.Eliminate((0, 1)))
    with pytest.raises(
        RuntimeError,
        match=r"(?s)simulate\(formulation=Eliminate\(rows=\(0, 1\)"
        r"\)\): the eliminated rows are not a removable.*at q0",
    ):
        mb.simulate(chain_model, q, qd, 0.1, formulation=mb.Eliminate((0, 1)))
    rx = mb.reactions(doubled_pin, doubled_pin.q0, jnp.zeros(3), method=mb.Eliminate((2, 3)))
    reference = mb.accelerations(doubled_pin, doubled_pin.q0, jnp.zeros(3))
    np.testing.assert_allclose(rx.qdd, reference, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(rx.lam[2:], 0.0)


@pytest.mark.parametrize("where", ["eager", "jit"])
def test_analyses_refuse_non_finite_states(chain_model, where):
    """nan or inf in q or qd used to give rank 0 with every pair "not unique" (solvability) or
    nan results with no error (reactions, accelerations, consistent_velocity); each now names
    the function, the entry and its body, eagerly and inside jit."""
    wrap = (lambda f: f) if where == "eager" else jax.jit
    q, qd = chain_model.q0, jnp.zeros(6)
    bad_q, bad_qd = q.at[4].set(np.nan), qd.at[2].set(np.inf)
    cases = [
        (lambda: wrap(mb.solvability)(chain_model, bad_q).rank, "solvability: q", 4, "y", "b2"),
        (lambda: wrap(mb.reactions)(chain_model, bad_q, qd).lam, "reactions: q", 4, "y", "b2"),
        (
            lambda: wrap(mb.accelerations)(chain_model, q, bad_qd),
            "accelerations: qd",
            2,
            "phi",
            "b1",
        ),
        (
            lambda: wrap(mb.consistent_velocity)(chain_model, bad_q, qd),
            "consistent_velocity: q",
            4,
            "y",
            "b2",
        ),
    ]
    for run, label, k, component, body in cases:
        with pytest.raises(
            RuntimeError,
            match=re.escape(f"{label}[{k}] ({component} of body '{body}') is not finite"),
        ):
            run()


def test_state_of_the_wrong_length(chain_model):
    """A q of the wrong length used to be indexed silently (C, Phi and a solvability report of
    a 5-vector); it is refused at trace time naming the function and the layout."""
    q5 = chain_model.q0[:5]
    shape = r"q must have shape \(n,\) = \(6,\).*got shape \(5,\)"
    with pytest.raises(ValueError, match="solvability: " + shape):
        mb.solvability(chain_model, q5)
    with pytest.raises(ValueError, match="Model.C: " + shape):
        chain_model.C(q5)
    with pytest.raises(ValueError, match="Model.phi: " + shape):
        chain_model.phi(q5)
    with pytest.raises(ValueError, match="consistent_velocity: " + shape):
        mb.consistent_velocity(chain_model, q5, jnp.zeros(6))


def test_reactions_check_the_state(chain_model):
    """reactions at a state off the constraints used to return numbers silently. Moving b2 by
    1 mm in y breaks only pair B's position rows; a vertical velocity of b2 alone breaks only
    B's velocity rows (as in the simulate tests above): both are refused naming B, also in a
    vmapped batch whose other member is consistent. check=False computes anyway; its
    reactions still satisfy sum_X f_X = M qdd - F (seed 001, eq. 15) to 1e-12."""
    q, qd = chain_model.q0, jnp.zeros(6)
    with pytest.raises(
        RuntimeError,
        match="reactions: q violates the position constraints of "
        "pair 'B'.*mb.assemble.*check=False",
    ):
        mb.reactions(chain_model, q.at[4].add(1e-3), qd)
    with pytest.raises(
        RuntimeError,
        match="reactions: qd violates the velocity constraints.*of pair 'B'.*consistent_velocity",
    ):
        mb.reactions(chain_model, q, qd.at[4].set(1.0))
    # batch: the consistent member has a 1e-9 residual in B (below the tolerance) and the
    # broken one violates O; equinox names the largest index over the batch, which used to
    # pick B from the member that passes
    qs = jnp.stack([q.at[4].add(1e-9), q.at[0].add(1e-3).at[3].add(1e-3)])
    with pytest.raises(RuntimeError, match="position constraints of pair 'O'"):
        jax.vmap(lambda x: mb.reactions(chain_model, x, qd).lam)(qs)
    off = q.at[4].add(1e-3)
    rx = mb.reactions(chain_model, off, qd, check=False)
    total = jnp.sum(rx.generalized_array, axis=0)
    F = chain_model.forces(off, qd)
    np.testing.assert_allclose(total, chain_model.mass_matrix() @ rx.qdd - F, atol=1e-12)


def test_element_names_and_numbers():
    """Names that are not non-empty strings (they broke mb.save / mb.load), negative spring
    constants, and numbers given as text are refused naming the element (or body) and the
    field; a negative traced stiffness is refused inside jit."""
    m, b1, b2 = _chain()
    with pytest.raises(ValueError, match="Revolute: name must be a non-empty string, got 42"):
        mb.Revolute(42, b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0))
    with pytest.raises(ValueError, match="Weld: name must be a non-empty string, got ''"):
        mb.Weld("", b1, b2)

    def spring(**kw):
        args = (
            dict(s_i=(0.0, 0.0), s_j=(0.0, 0.0), stiffness=1.0, damping=0.1, free_length=1.0) | kw
        )
        return mb.SpringDamper("S", b1, b2, **args)

    for label in ("stiffness", "damping", "free_length"):
        with pytest.raises(
            ValueError, match=f"SpringDamper 'S': {label} = -2.0 must be non-negative"
        ):
            spring(**{label: -2.0})
    with pytest.raises(ValueError, match="RotationalSpringDamper 'R': damping = -1.0 must"):
        mb.RotationalSpringDamper("R", b1, b2, stiffness=1.0, damping=-1.0)
    with pytest.raises(
        ValueError, match="SpringDamper 'S': stiffness must be a number.*got '1e3' of type str"
    ):
        spring(stiffness="1e3")
    with pytest.raises(ValueError, match="Torque 'T': tau must be a number"):
        mb.Torque("T", b1, "2.0")
    with pytest.raises(ValueError, match="body 'b3': mass must be a real number.*'1.0'"):
        m.body("b3", mass="1.0", inertia=1.0)

    @eqx.filter_jit
    def spring_force(k):
        mm, c1, c2 = _chain()
        mm.add(
            mb.SpringDamper(
                "S",
                c1,
                c2,
                s_i=(0.0, 0.0),
                s_j=(0.0, 0.0),
                stiffness=k,
                damping=0.0,
                free_length=0.5,
            )
        )
        model = mm.build()
        return model.forces(model.q0, jnp.zeros(6))

    # control: centres 1 m apart, free length 0.5: tension k / 2 along x
    np.testing.assert_allclose(
        spring_force(jnp.asarray(2.0))[np.array([0, 3])], [1.0, -1.0], atol=1e-15
    )
    with pytest.raises(
        RuntimeError,
        match="SpringDamper 'S': stiffness must be non-negative "
        r"\(traced value\)",
    ):
        spring_force(jnp.asarray(-2.0))


def test_chunked_solvability_map(chain_model):
    """The README's advice for large batches, jax.lax.map(f, xs, batch_size=k) over
    mb.solvability, used to crash (ZeroDivisionError) on the report's size-0 group arrays.
    Five configurations of the chain (b1 and b2 rotated rigidly about the pin by angle a,
    consistent by construction) in chunks of 2: the ranks, verdicts and |B_X| equal the
    one-at-a-time reports."""

    def rotated(a):
        c, s = jnp.cos(a), jnp.sin(a)
        return jnp.array([0.5 * c, 0.5 * s, a, 1.5 * c, 1.5 * s, a])

    qs = jax.vmap(rotated)(jnp.linspace(-1.0, 1.0, 5))
    chunked = jax.jit(
        lambda xs: jax.lax.map(lambda x: mb.solvability(chain_model, x), xs, batch_size=2)
    )(qs)
    assert chunked.group_solvable is None
    for k in range(5):
        rep = mb.solvability(chain_model, qs[k])
        assert int(chunked.rank[k]) == int(rep.rank) == 4
        np.testing.assert_array_equal(chunked.solvable[k], rep.solvable)
        np.testing.assert_allclose(chunked.b_norm[k], rep.b_norm, atol=1e-12)


@eqx.filter_jit
def _simulate_batch_compiled(model, q0s, qd0s, t0, t1, ts):
    def one(q0, qd0):
        return mb.simulate(model, q0, qd0, t1, t0=t0, ts=ts, throw=False)

    return jax.vmap(one)(q0s, qd0s)


def _simulate_batch(model, q0s, qd0s, t0, t1, ts):
    """The one compiled simulate of the tests below: vmapped over four initial states, t0, t1
    and ts traced (arrays, so that their checks run inside jit and every call shares the
    program), throw=False."""
    return _simulate_batch_compiled(
        model, q0s, qd0s, jnp.asarray(t0, jnp.float64), jnp.asarray(t1, jnp.float64), ts
    )


def _four(x):
    return jnp.stack([x] * 4)


T_BACK = 0.6
TS_FWD = jnp.linspace(0.0, T_BACK, 7)


def test_backward_integration_is_stabilized(chain_model):
    """t1 < t0 integrates backwards with the Baumgarte damping acting in the direction of
    integration (before, the violations grew like exp(2 alpha |t|): |Phi| 2.3e-3 after 1.5 s).
    Reference: time reversibility of the conservative chain: 0.6 s forward from rest at q0,
    then back from the state reached, returns to q0 (1e-7: two runs at rtol 1e-8); |Phi| stays
    below 1e-9 along the backward run."""
    g = chain_model.q0, jnp.zeros(6)
    fwd = _simulate_batch(chain_model, _four(g[0]), _four(g[1]), 0.0, T_BACK, TS_FWD)
    assert bool(jnp.all(fwd.success))
    back = _simulate_batch(chain_model, fwd.q[:, -1], fwd.qd[:, -1], T_BACK, 0.0, TS_FWD[::-1])
    assert bool(jnp.all(back.success))
    np.testing.assert_allclose(back.q[0, -1], g[0], rtol=0, atol=1e-7)
    np.testing.assert_allclose(back.qd[0, -1], g[1], rtol=0, atol=1e-7)
    phi = jax.vmap(chain_model.phi)(back.q[0])
    assert float(jnp.max(jnp.abs(phi))) < 1e-9


def test_vmapped_simulate_refuses_bad_starts_per_member(chain_model):
    """With throw=False one bad initial state in a vmapped batch used to raise for the whole
    batch; now each member gets the RESULTS code of its own reason (Trajectory.result):
    consistent (successful), b2 1 mm off pin B (inconsistent_positions), a nan coordinate
    (nonfinite_positions), b2 moving vertically alone (inconsistent_velocities, velocity
    constraints of B). The refused members integrate nothing (0 steps, t_stop = t0, states
    inf); the consistent member equals the run of the backward test's batch (the same program,
    1e-12). Each code's message says what to do."""
    q0, qd0 = chain_model.q0, jnp.zeros(6)
    q0s = jnp.stack([q0, q0.at[4].add(1e-3), q0.at[1].set(np.nan), q0])
    qd0s = jnp.zeros((4, 6)).at[3, 4].set(1.0)
    traj = _simulate_batch(chain_model, q0s, qd0s, 0.0, T_BACK, TS_FWD)
    R = mb.RESULTS
    codes = (
        R.successful,
        R.inconsistent_positions,
        R.nonfinite_positions,
        R.inconsistent_velocities,
    )
    for k, code in enumerate(codes):  # the batch's codes, one per member
        np.testing.assert_array_equal(traj.result == code, np.arange(4) == k)
    assert "mb.assemble(model, q, t)" in R[R.inconsistent_positions]
    assert "mb.consistent_velocity(model, q, qd, t)" in R[R.inconsistent_velocities]
    for code in codes[1:]:
        assert "simulate(throw=False) refuses" in R[code] and "throw=True" in R[code]
    np.testing.assert_array_equal(traj.success, [True, False, False, False])
    for k in (1, 2, 3):
        assert int(traj.num_steps[k]) == 0 and float(traj.t_stop[k]) == 0.0
        assert np.all(np.isinf(traj.q[k])) and np.all(np.isinf(traj.qd[k]))
    ref = _simulate_batch(chain_model, _four(q0), _four(qd0), 0.0, T_BACK, TS_FWD)
    np.testing.assert_allclose(traj.q[0], ref.q[0], rtol=0, atol=1e-12)


def test_simulate_checks_times_and_tolerances(chain_model):
    """t1 nan or inf (used to 'succeed' with every state inf), rtol / atol <= 0 or nan (used
    to run 50 s, then blame the step size), and empty, 2-D, nan, out-of-range or unordered
    save times (late or raw errors) are refused before diffrax runs, naming the argument;
    traced values (inside jit) when the program runs."""
    q0, qd0 = chain_model.q0, jnp.zeros(6)
    sim = ft.partial(mb.simulate, chain_model, q0, qd0)
    for t1 in (np.nan, np.inf):
        with pytest.raises(ValueError, match=f"simulate: t1 = {t1} is not finite"):
            sim(t1)
    for label, value in (("rtol", 0.0), ("rtol", np.nan), ("atol", -1e-10), ("atol", 0.0)):
        with pytest.raises(
            ValueError, match=f"simulate: {label} must be a positive, finite tolerance.*got {value}"
        ):
            sim(0.1, **{label: value})
    bad_ts = [
        (jnp.full((2, 3), 0.05), r"ts must be a 1-D array of save times, got shape \(2, 3\)"),
        (jnp.zeros(0), "ts is empty"),
        (jnp.array([0.0, np.nan]), r"ts\[1\] = nan is not finite"),
        (jnp.array([0.0, 0.2]), r"ts\[1\] = 0.2\d* lies outside \[t0, t1\] = \[0, 0.1\d*\]"),
        (jnp.array([0.05, 0.02]), r"ts must be increasing, but ts\[1\] = 0.02\d* comes after"),
    ]
    for ts, message in bad_ts:
        with pytest.raises(ValueError, match="simulate: " + message):
            sim(0.1, ts=ts)
    four = _four(q0), _four(qd0)
    with pytest.raises(RuntimeError, match="simulate: t1 is not finite"):
        _simulate_batch(chain_model, *four, 0.0, jnp.inf, TS_FWD)
    with pytest.raises(RuntimeError, match="simulate: ts must be ordered from t0 towards t1"):
        _simulate_batch(chain_model, *four, 0.0, T_BACK, TS_FWD[::-1])


def test_forward_mode_derivative_needs_forward_mode_adjoint():
    """jax.jacfwd through simulate with the default adjoint used to fail with diffrax's
    custom_vjp message; the message now says what to pass, and that works. Reference: a free
    disc (no constraints) under a constant torque tau = 2 with J = 0.5 has
    phi(T) = phi0 + phidot0 T + 2 T^2 (closed form), so d q(T) / d qd0 = T I exactly."""
    m = mb.Mechanism()
    disc = m.body("disc", mass=1.0, inertia=0.5)
    m.add(mb.Torque("tau", disc, 2.0))
    model = m.build()
    T = 0.5

    def final_q(qd0, adjoint=None):
        traj = mb.simulate(model, jnp.zeros(3), qd0, T, ts=jnp.array([T]), adjoint=adjoint)
        return traj.q[-1], traj.q[-1]

    with pytest.raises(
        TypeError,
        match=r"simulate: forward-mode differentiation \(jax.jacfwd.*"
        r"adjoint=diffrax.ForwardMode\(\)",
    ):
        jax.jacfwd(final_q, has_aux=True)(jnp.zeros(3))
    qd0 = jnp.array([0.1, -0.2, 0.3])
    jac, q = jax.jacfwd(lambda v: final_q(v, diffrax.ForwardMode()), has_aux=True)(qd0)
    np.testing.assert_allclose(q, [0.1 * T, -0.2 * T, 0.3 * T + 2.0 * T**2], atol=1e-9)
    np.testing.assert_allclose(jac, T * np.eye(3), atol=1e-9)


def test_errors_inside_plain_jit_are_readable(chain_model):
    """Inside plain jax.jit (not eqx.filter_jit) a runtime check reaches the user as an XLA
    error starting "INTERNAL: CpuCallback error"; jaxmb's message is in its text (on the line
    ending the traceback, as the README's "Errors inside jax.jit" says), and the CLI's
    error_line extracts exactly that message."""
    from jaxmb import cli

    message = "solvability: q[4] (y of body 'b2') is not finite"
    with pytest.raises(Exception) as info:
        jax.jit(mb.solvability)(chain_model, chain_model.q0.at[4].set(np.nan))
    assert message in str(info.value)
    assert cli.error_line(info.value) == message


def _stiff_pendulum(rigid):
    """A bob (m = 1) hanging 1 m below a ground pivot, held by a spring of k = 1e12 N/m
    (vibration period 2 pi sqrt(m / k) = 6.3e-6 s) or, as the max_steps message advises, by a
    Distance constraint."""
    m = mb.Mechanism()
    bob = m.body("bob", mass=1.0, inertia=0.01, q=(0.0, -1.0, 0.0))
    if rigid:
        m.add(mb.Distance("rod", m.ground, bob, s_i=(0.0, 0.0), s_j=(0.0, 0.0), length=1.0))
    else:
        m.add(
            mb.SpringDamper(
                "rod",
                m.ground,
                bob,
                s_i=(0.0, 0.0),
                s_j=(0.0, 0.0),
                stiffness=1e12,
                damping=0.0,
                free_length=1.0,
            )
        )
    m.add(mb.Gravity((0.0, -9.81)))
    return m.build()


def test_stiff_spring_hint_is_true():
    """max_steps used to advise an implicit solver, which also runs out of steps (Kvaerno5 at
    k = 1e12 takes steps of about the vibration period, measured). The message now says to
    model a rigid connection as a constraint, and that works: the Distance pendulum runs 0.1 s
    in a few dozen steps where the spring (stable steps ~ 4e-7 s) exhausts 4000 before 2 ms,
    and over the first 1 ms, which the spring resolves, both agree to 1e-9 (the static
    stretch is m g / k = 1e-11 m). Swinging at 1 m/s from the bottom."""
    qd0 = jnp.array([1.0, 0.0, 0.0])
    spring, rod = _stiff_pendulum(False), _stiff_pendulum(True)
    short, long = jnp.array([0.0, 5e-4, 1e-3]), jnp.array([0.0, 0.05, 0.1])
    with pytest.raises(
        RuntimeError,
        match=r"max_steps ran out at t = .*model it as a "
        r"constraint instead \(e.g. mb.Distance",
    ):
        mb.simulate(spring, spring.q0, qd0, 0.1, ts=long, max_steps=4000)
    resolved = mb.simulate(spring, spring.q0, qd0, 1e-3, ts=short, max_steps=4000)
    assert int(resolved.num_steps) > 1000
    rigid = mb.simulate(rod, rod.q0, qd0, 1e-3, ts=short)
    np.testing.assert_allclose(rigid.q, resolved.q, rtol=0, atol=1e-9)
    rigid = mb.simulate(rod, rod.q0, qd0, 0.1, ts=long)
    assert bool(rigid.success) and int(rigid.num_steps) < 100


_YAML_HEAD = """jaxmb_model: 1
bodies:
- name: crank
  mass: 1.0
  q: [0.05, 0.0, 0.0]
"""


def test_model_file_size_limits(tmp_path):
    """A 407-byte YAML alias bomb in a numeric field (9 levels of 9 aliases: 9^9 = 3.9e8
    values) used to cost 56 s and 1.75 GB; a 400-digit integer and 100,000-deep nesting ended
    in tracebacks. Each is now a ValueError naming the file and the problem, at once.
    Control: a file using anchors and aliases within the limits loads."""
    levels = ["&a [1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]"]
    for prev, name in zip("abcdefgh", "bcdefghi"):
        levels.append(f"&{name} [{', '.join([f'*{prev}'] * 9)}]")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(_YAML_HEAD + f"  inertia: [{', '.join(levels)}]\n")
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"bomb.yaml.*expands to more than 1,000,000 values"):
        mb.load(bomb)
    assert time.perf_counter() - start < 2.0
    loop = tmp_path / "loop.yaml"
    loop.write_text(_YAML_HEAD + "  inertia: &x [*x]\n")
    with pytest.raises(ValueError, match="recursive YAML alias"):
        mb.load(loop)
    huge = tmp_path / "huge.json"
    huge.write_text(json.dumps({**_FILE, "bodies": [{**_FILE["bodies"][0], "mass": 10**400}]}))
    with pytest.raises(
        ValueError,
        match=r"bodies\[0\] \('crank'\): mass = 10{79}\.\.\. "
        r"\(401 characters\) is beyond the float64 range",
    ):
        mb.load(huge)
    for suffix, text in (
        (".json", "[" * 100_000 + "]" * 100_000),
        (".yaml", "[" * 100_000 + "]" * 100_000),
    ):
        deep = tmp_path / f"deep{suffix}"
        deep.write_text(text)
        with pytest.raises(ValueError, match=f"deep{suffix}'?: nested too deeply"):
            mb.load(deep)
    fine = tmp_path / "anchors.yaml"
    fine.write_text(
        _YAML_HEAD + "  inertia: 0.01\nelements:\n"
        "- {type: Revolute, name: O, i: ground, j: crank, s_i: &o [0.0, 0.0], "
        "s_j: [-0.05, 0.0]}\n"
        "- {type: Force, name: F, body: crank, s: *o, f: [0.0, 1.0]}\n"
    )
    assert mb.load(fine).pair_names == ("O",)


_PUSHED_YAML = f"""jaxmb_model: 1
bodies:
- {{name: bob, mass: 1.0, inertia: 0.01, q: [0.0, {-L}, 0.0]}}
elements:
- {{type: Revolute, name: pin, i: ground, j: bob, s_i: [0.0, 0.0], s_j: [0.0, {L}]}}
- {{type: AbsoluteDriver, name: push, body: bob, coordinate: 0, f: {{type: Linear, slope: 1.0}}}}
initial_velocity: [1.0, 0.0, {1.0 / L}]
"""


@pytest.fixture
def cli_main(monkeypatch):
    """jaxmb's command line in this process (compiled programs shared with the tests above),
    without switching on the persistent compilation cache; returns the exit message (None on
    success)."""
    from jaxmb import cli

    monkeypatch.setenv("JAXMB_NO_CACHE", "1")

    def main(*argv):
        try:
            assert cli.main(list(argv)) == 0
        except SystemExit as exc:
            assert isinstance(exc.code, str) and "\n" not in exc.code  # status 1, one line
            return exc.code
        return None

    return main


def test_cli_failures_are_one_line_and_keep_files(cli_main, tmp_path, monkeypatch):
    """A failed run used to print a 55-line traceback with a placeholder time; --t1 nan / -1
    exited 0; --num-saves -3 and report of a model that cannot assemble ended in tracebacks;
    --out was checked after the run and written in place. Now: one line with the time and the
    cause (the pushed pendulum of test_singular_configuration_during_run: t* = 0.5 s), exit
    status 1, and the previous output file intact, also when the write itself fails. The
    model that cannot assemble is that of test_contradictory_constraints ('push' keeps the
    largest residual, 2/3)."""
    model_file = tmp_path / "pushed.yaml"
    model_file.write_text(_PUSHED_YAML)
    out = tmp_path / "run.npz"
    out.write_bytes(b"previous run")

    def simulate(t1, saves="11", path=out):
        return cli_main(
            "simulate", str(model_file), "--t1", t1, "--num-saves", saves, "--out", str(path)
        )

    assert simulate("nan") == "jaxmb: --t1 nan: expected a positive, finite duration in seconds"
    assert "--t1 -1: expected a positive" in simulate("-1")
    assert simulate("1", saves="-3") == (
        "jaxmb: --num-saves -3: expected at least 2 (the first and last instants)"
    )
    from jaxmb import cli

    with monkeypatch.context() as patch:  # the output folder is checked before any run
        patch.setattr(cli, "_trajectory", None)
        assert "does not exist" in simulate("1", path=tmp_path / "no" / "x.npz")
    message = simulate("1.0")
    assert re.fullmatch(
        r"jaxmb: simulate: a singular configuration was reached at "
        r"t = 0\.5000000\d*: .*pairs involved: \['pin', 'push'\].*",
        message,
    )
    assert out.read_bytes() == b"previous run"

    def failing_savez(fh, **arrays):
        fh.write(b"half a file")
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(np, "savez", failing_savez)
        message = simulate("0.4")
    assert message.startswith(f"jaxmb: --out {str(out)!r}: cannot write it: No space left")
    assert out.read_bytes() == b"previous run"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pushed.yaml", "run.npz"]
    assert simulate("0.4") is None
    q = np.load(out)["q"]
    np.testing.assert_allclose(q[:, 0], np.linspace(0.0, 0.4, 11), atol=1e-7)  # x = t
    stuck = tmp_path / "stuck.yaml"
    stuck.write_text(
        "jaxmb_model: 1\nbodies:\n- {name: b1, mass: 1.0, inertia: 0.1}\n"
        "elements:\n- {type: Revolute, name: O, i: ground, j: b1, s_i: [0.0, 0.0], "
        "s_j: [0.0, 0.0]}\n- {type: AbsoluteDriver, name: hold, body: b1, "
        "coordinate: 0, f: 0.0}\n- {type: AbsoluteDriver, name: push, body: b1, "
        "coordinate: 0,"
        " f: 1.0}\n"
    )
    assert cli_main("report", str(stuck)).startswith(
        "jaxmb: assemble: no configuration satisfies the constraints; pair 'push'"
    )


def test_raw_python_errors_became_messages(chain_model):
    """Inputs that surfaced as raw Python/JAX errors (a float conversion, a KeyError, a
    broadcasting error inside diffrax, ZeroDivisionError) now name the argument and the
    problem."""
    from jaxmb import rigid_limit

    model = chain_model
    q0, qd0 = model.q0, jnp.zeros(model.n)
    pin = model.pair_names[0]
    for value in ("abc", None, True):
        with pytest.raises(
            ValueError, match=f"Compliance: stiffness of pair '{pin}' must be a positive number"
        ):
            mb.Compliance({pin: value})
    with pytest.raises(ValueError, match="Compliance: default must be a positive number"):
        mb.Compliance({}, default="1e3")
    soft = rigid_limit.with_bushings(model, {pin: 1e4})
    with pytest.raises(
        ValueError,
        match=r"pair_forces: \['O9'\] are not Bushings.*did you "
        f"mean '{pin}'",
    ):
        rigid_limit.pair_forces(soft, soft.q0, qd0, ["O9"])

    class ThreeNumbers(mb.AbstractAccelerationFormulation):
        def accelerations(self, model, terms):
            return jnp.zeros(3)

    with pytest.raises(
        ValueError,
        match=r"ThreeNumbers.accelerations returned shape \(3,\).*"
        rf"shape \(n,\) = \({model.n},\)",
    ):
        mb.simulate(model, q0, qd0, 0.1, formulation=ThreeNumbers())
    batch = (jnp.stack([q0, q0]), jnp.stack([qd0, qd0]))
    for kwargs, what in (
        (dict(chunk=float("nan")), "chunk must be an integer >= 1"),
        (dict(chunk=0), "chunk must be an integer >= 1"),
        (dict(devices=[]), "devices must be a non-empty sequence"),
    ):
        with pytest.raises(ValueError, match=f"batch.map: {what}"):
            mb.batch.map(lambda q, qd: q, *batch, **kwargs)


def test_a_huge_time_span_is_not_blamed_on_gravity():
    """t1 = 1e308 makes dtmin = 1e-12 |t1 - t0| = 1e296 s, longer than any step the motion
    allows: the step size collapses at t0. That used to be blamed on gravity, a constant force;
    now no force element is named, the long span is, and dtmin's value is given."""
    from jaxmb.models import slider_crank

    model = slider_crank.build()  # under gravity
    assert any(isinstance(f, mb.Gravity) for f in model.force_elements)
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(model.n))
    with pytest.raises(RuntimeError) as err:
        mb.simulate(model, model.q0, qd0, 1e308, formulation="null_space")
    text = str(err.value)
    assert "where no applied force changes" in text and "time span" in text
    assert "Gravity" not in text and "dtmin = 1e+296 s" in text


def test_gradient_at_a_singular_configuration_is_nan_not_plausible():
    """The N = 1 N-four-bar at its collinear position (cranks horizontal): A0's y reaction is
    unique there, but C loses rank, so the reactions are not differentiable: the rank held
    fixed gave -1.56 where the one-sided derivatives (central differences at +-1e-3 rad) are
    -0.976 and -1.024. Now the gradient is NaN, eagerly with a SingularDerivativeWarning and
    inside jit, and `Reactions.singular` marks the state; off the singular position it equals
    central differences (1e-6 relative)."""
    from jaxmb._analyses.reactions import SingularDerivativeWarning
    from jaxmb.models import n_four_bar

    model = n_four_bar.build(1)
    row = model.rows("A0")

    def a0_y(angle):
        q, qd = n_four_bar.configuration(angle, 1), n_four_bar.velocity(angle, -1.0, 1)
        return mb.reactions(model, q, qd, method="min_norm").lam[row][1]

    assert bool(
        mb.reactions(
            model, n_four_bar.configuration(0.0, 1), n_four_bar.velocity(0.0, -1.0, 1)
        ).singular
    )
    with pytest.warns(SingularDerivativeWarning, match="singular configuration"):
        assert np.isnan(float(jax.grad(a0_y)(0.0)))
    assert np.isnan(float(jax.jit(jax.grad(a0_y))(0.0)))
    h = 1e-6
    for angle in (1e-3, 0.3):
        fd = (a0_y(angle + h) - a0_y(angle - h)) / (2 * h)
        assert abs(float(jax.grad(a0_y)(angle)) - float(fd)) < 1e-6 * abs(float(fd))


def test_gradient_of_a_model_built_at_its_singular_position_is_nan():
    """The same reaction with the model built at the collinear position (angle0 = 0): the rank
    of C was compared with its rank at model.q0, itself singular, so `singular` stayed False
    and jax.grad gave -0.436 where central differences (the reference, +-1e-6 rad) give
    -0.99997, also at 1e-9 from it and under jit. The reference rank is now the mechanism's
    generic rank (at a configuration near q0 assembled onto the constraints): 8 of 8 rows, 7
    at the collinear position. So `singular` is set there, the gradient is NaN with the
    warning, and off the singular position (1e-3 rad) it still equals central differences
    (1e-6 relative: their truncation error, O(h^2) times the third derivative, is far below)."""
    from jaxmb._analyses.reactions import SingularDerivativeWarning
    from jaxmb.models import n_four_bar

    model = n_four_bar.build(1, angle0=0.0)
    row = model.rows("A0")
    assert int(mb.solvability(model, model.q0).rank) == 7  # q0 itself singular

    def a0_y(angle):
        q, qd = n_four_bar.configuration(angle, 1), n_four_bar.velocity(angle, -1.0, 1)
        return mb.reactions(model, q, qd, method="min_norm").lam[row][1]

    h = 1e-6
    for angle in (0.0, 1e-9):
        q, qd = n_four_bar.configuration(angle, 1), n_four_bar.velocity(angle, -1.0, 1)
        assert bool(mb.reactions(model, q, qd).singular)
        fd = (a0_y(angle + h) - a0_y(angle - h)) / (2 * h)
        assert abs(float(fd) + 1.0) < 1e-3  # the plausible wrong value was -0.436
        with pytest.warns(SingularDerivativeWarning, match="singular configuration"):
            assert np.isnan(float(jax.grad(a0_y)(angle)))
        assert np.isnan(float(jax.jit(jax.grad(a0_y))(angle)))
    fd = (a0_y(1e-3 + h) - a0_y(1e-3 - h)) / (2 * h)
    assert abs(float(jax.grad(a0_y)(1e-3)) - float(fd)) < 1e-6 * abs(float(fd))
    from jaxmb._analyses.reactions import generic_rank

    assert int(generic_rank(model, 0.0)) == 8 == model.num_rows


def test_extreme_stiffness_is_refused_with_its_reason():
    """Compliance stiffness ratios of 1e16 made the parallelogram's statics report "not an
    equilibrium" where there is one; ratios above 1e12 (where float64 leaves errors of 1e-5 of the
    largest force: MAX_STIFFNESS_RATIO) are now refused naming the ratio, the two pairs and the
    limit, eagerly and traced. A 1e12 ratio still gives the reactions of a 1e6 one's limit (the
    stiff pair rigid: 1e-5 relative). Bushings of 5e18 N/m "converged" in
    `static_equilibrium` to zero forces (Newton's steps below the resolution of q); now the
    unbalanced result is refused with that reason."""
    from jaxmb import rigid_limit
    from jaxmb.models import parallelogram

    model = parallelogram.build()
    stiff = lambda k: mb.Compliance({"O1": k}, default=1.0)  # noqa: E731
    with pytest.raises(
        ValueError,
        match=r"Compliance stiffness ratio 1e\+16 \(pair 'O1': "
        r"1e\+16, pair 'O2': 1\) exceeds 1e\+12",
    ):
        mb.statics(model, model.q0, method=stiff(1e16))
    traced = eqx.filter_jit(lambda k: mb.statics(model, model.q0, method=stiff(k)).lam)
    with pytest.raises(
        Exception,
        match="ratio of the largest to the smallest stiffness "
        r"exceeds 1e\+12 \(traced value\)",
    ):
        traced(jnp.asarray(1e16))
    near, far = traced(jnp.asarray(1e12)), traced(jnp.asarray(1e6))
    assert float(jnp.max(jnp.abs(near - far))) < 1e-5 * float(jnp.max(jnp.abs(far)))
    soft = rigid_limit.with_bushings(model, {n: 5e18 for n in rigid_limit.PARALLELOGRAM_STIFFNESS})
    with pytest.raises(
        Exception,
        match="static_equilibrium: the forces balance only to more than 1e-06.*float64 resolution",
    ):
        rigid_limit.static_equilibrium(soft, soft.q0)
