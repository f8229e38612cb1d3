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
import json

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
    with pytest.raises(ValueError, match="Distance 'D': its first body must be a body handle.*"
                                         "got 'b1' of type str"):
        mb.Distance("D", "b1", b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0), length=1.0)
    with pytest.raises(ValueError, match="Torque 'T': body must be a body handle.*got 'b2'"):
        mb.Torque("T", "b2", 1.0)
    ghost = dataclasses.replace(b2, name="ghost", index=7)
    with pytest.raises(ValueError, match="Revolute 'R': body 'ghost' is unknown to this "
                                         r"Mechanism; its bodies are \['b1', 'b2'\]"):
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
        m.add(mb.SpringDamper("B", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0), stiffness=1.0,
                              damping=0.0, free_length=1.0))


@pytest.mark.parametrize("label,value", [("mass", 0.0), ("mass", -2.0), ("inertia", 0.0),
                                         ("inertia", -1e-3)])
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
    with pytest.raises(ValueError, match=r"Revolute 'R': s_j must be a 2-vector, got shape "
                                         r"\(3,\)"):
        mb.Revolute("R", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0, 0.0))
    with pytest.raises(ValueError, match=r"Distance 'D': length must be a scalar, got shape "
                                         r"\(2,\)"):
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
    with pytest.raises(ValueError, match=r"RelativeAngleDriver 'motor': f is a Linear "
                                         r"returning shape \(2,\); it must return a scalar"):
        mb.RelativeAngleDriver("motor", m.ground, b1, f=mb.drive.Linear(slope=(1.0, 2.0)))
    with pytest.raises(ValueError, match=r"AbsoluteDriver 'x': f is a Constant returning shape "
                                         r"\(3,\)"):
        mb.AbsoluteDriver("x", b2, 0, f=(0.0, 1.0, 2.0))
    with pytest.raises(ValueError, match=r"Force 'F': f is a Harmonic returning shape \(\); "
                                         r"it must return shape \(2,\)"):
        mb.Force("F", b2, s=(0.0, 0.0), f=mb.drive.Harmonic(1.0, 2.0))
    with pytest.raises(ValueError, match=r"Torque 'T': tau is a Constant returning shape "
                                         r"\(2,\)"):
        mb.Torque("T", b1, mb.drive.Constant(jnp.ones(2)))


def test_non_finite_drive_parameters_at_build():
    """A drive function (or constant load) with non-finite parameters names the element."""
    m, b1, _ = _chain()
    with pytest.raises(ValueError, match=r"Torque 'T': tau \(Constant\) has a non-finite "
                                         "parameter inf"):
        mb.Torque("T", b1, np.inf)
    with pytest.raises(ValueError, match=r"RelativeAngleDriver 'motor': f \(Linear\) has a "
                                         "non-finite parameter nan"):
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
    with pytest.raises(RuntimeError, match="velocity constraints C qd \\+ b = 0 of pair 'B'.*"
                                           "mb.consistent_velocity"):
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
    with pytest.raises(RuntimeError, match="assemble: no configuration satisfies the "
                                           "constraints; pair 'push' keeps the largest residual"):
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
    assert traj.result == diffrax.RESULTS.dt_min_reached
    assert bool(traj.singular)
    np.testing.assert_allclose(traj.t_stop, L / 1.0, atol=1e-6)
    before = np.asarray(TS) <= float(traj.t_stop)
    assert np.all(np.isfinite(traj.q[before])) and np.all(np.isinf(traj.q[~before]))
    np.testing.assert_allclose(traj.q[before, 0], TS[before], atol=1e-6)  # x = speed t
    with pytest.raises(RuntimeError, match=r"singular configuration was reached at "
                                           r"t = 0\.50000000\d*: .*pairs involved: "
                                           r"\['pin', 'push'\]"):
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
    with pytest.raises(RuntimeError, match=r"step size collapsed \(below dtmin.*changing "
                                           "fastest there is Torque 'spike'"):
        _run_loudly(model)


def test_non_finite_applied_forces():
    """A torque that turns nan at t = 0.3 s (finite before) is named when the run stops there;
    one that is nan already at t0 is named before integrating."""
    with pytest.raises(RuntimeError, match="applied force of Torque 'spike' is not finite "
                                           "where the integration stopped"):
        _run_loudly(_spun_disc(0.3, 1.0))
    with pytest.raises(RuntimeError, match=r"applied force of Torque 'spike' is not finite at "
                                           r"the initial state \(t0\)"):
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
    with pytest.raises(ValueError, match=r"Eliminate: row 4 is out of range; C has 4 rows "
                                         r"\(0..3\)"):
        _reactions(doubled_pin, doubled_pin.q0, jnp.zeros(3), method=mb.Eliminate((1, 4)))


def test_eliminate_rows_leaving_a_singular_system(doubled_pin):
    """Dropping one row where p = 2 leaves rows 1 and 3 (the y rows of O and O2, identical)
    in the reduced system, which is singular: the error names the method with its rows. The
    removable sets are pairs with one x row (0 or 2) and one y row (1 or 3); solvability
    finds one of them."""
    assert eqx.filter_jit(mb.solvability)(doubled_pin, doubled_pin.q0).redundant_rows in {
        (0, 1), (0, 3), (1, 2), (2, 3)}
    # both checks fail here (one row dropped where p = 2, and the reduced system is singular):
    # whichever is reported first, it names the method with its rows
    either = (r"reactions\(method=Eliminate\(rows=\(0,\)\)\): (the remaining rows leave a "
              r"singular|the eliminated rows are not a removable set)")
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
    "elements": [{"type": "Revolute", "name": "O", "i": "ground", "j": "crank",
                  "s_i": [0.0, 0.0], "s_j": [-0.05, 0.0]}],
}


def test_model_file_with_unknown_key_or_missing_field(tmp_path):
    """mb.load names the file, the entry and the key; control: the intact file loads."""
    assert mb.load(_write(tmp_path, _FILE)).pair_names == ("O",)
    typo = json.loads(json.dumps(_FILE))
    typo["elements"][0]["s_jj"] = typo["elements"][0].pop("s_j")
    with pytest.raises(ValueError, match=r"model\.json.*elements\[0\] \(Revolute 'O'\): "
                                         "unknown key 's_jj'"):
        mb.load(_write(tmp_path, typo))
    missing = json.loads(json.dumps(_FILE))
    del missing["bodies"][0]["inertia"]
    with pytest.raises(ValueError, match=r"model\.json.*bodies\[0\].*missing field 'inertia'"):
        mb.load(_write(tmp_path, missing))


def test_unknown_method_or_formulation(chain_model):
    """Unknown option strings name the function and list the accepted values."""
    with pytest.raises(ValueError, match="solvability: method must be 'qr', 'svd' or 'rank', "
                                         "got 'lu'"):
        mb.solvability(chain_model, chain_model.q0, method="lu")
    with pytest.raises(ValueError, match="reactions: method must be 'min_norm', 'auto'.*got "
                                         "'pinv'"):
        mb.reactions(chain_model, chain_model.q0, jnp.zeros(6), method="pinv")
    with pytest.raises(ValueError, match="statics: method must be 'min_norm', 'auto'.*got "
                                         "'pinv'"):
        mb.statics(chain_model, chain_model.q0, method="pinv")
    with pytest.raises(ValueError, match="inverse_dynamics: method must be 'min_norm', "
                                         "'auto'.*got 'pinv'"):
        mb.inverse_dynamics(chain_model, jnp.linspace(0.0, 0.1, 3), method="pinv")
    with pytest.raises(ValueError, match="simulate: formulation must be .*got 'lagrange'"):
        mb.simulate(chain_model, chain_model.q0, jnp.zeros(6), 0.1, formulation="lagrange")
