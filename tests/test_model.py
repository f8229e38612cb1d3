"""The built `Model` (layout, residuals, ranks of the mobile robot), traceable building
(`params -> Model` under jit, vmap and grad) and build-time validation of `Mechanism`.

Independent references used below:
- seed 001 section 4 (the paper): n = 21, m = 17, h = 5, the Appendix's row order (revolutes
  A-G, translational H, the driver, knife edges W1-W5), the block structure of the Pfaffian
  matrix (W1 on body 2, W2 on body 3, W3 and W4 on the platform 1, W5 on the trolley 7),
  eq. 35 (rank Phi_q = 17, rank Psi = 4, rank C = 20, at q0 and "for any other nonsingular
  configuration"), eq. 39 (the initial velocity) and the steering story of Fig. 2/Fig. 3 (turn
  right first, then left); ranks are computed by numpy's SVD on C taken out as a numpy array;
- the driver's geometry evaluated in plain numpy from the simulated coordinates (points P and
  Q of joint H, seed 001 eq. 43) against 20a + delta(t) (delta at the plateaus of Fig. 2 read
  off the drive's documented levels);
- a Python loop of eager builds for vmap and jit, central finite differences for grad;
- the element / mechanism validation messages (build time, ValueError naming the element).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle.linalg import rank
from oracle.planar import rot

import jaxmb as mb
from jaxmb.models import four_bar, mobile_robot

A_UNIT = mobile_robot.A_UNIT
ROBOT_TS = jnp.linspace(0.0, 20.0, 21)
PAPER_PAIRS = ("A", "B", "C", "D", "E", "F", "G", "H", "driver", "W1", "W2", "W3", "W4", "W5")
PAPER_ROWS = {  # seed 001 Appendix: 7 revolutes (2 rows), translational H (2), driver (1), 5 edges
    "A": (0, 2),
    "B": (2, 4),
    "C": (4, 6),
    "D": (6, 8),
    "E": (8, 10),
    "F": (10, 12),
    "G": (12, 14),
    "H": (14, 16),
    "driver": (16, 17),
    "W1": (17, 18),
    "W2": (18, 19),
    "W3": (19, 20),
    "W4": (20, 21),
    "W5": (21, 22),
}
# Table 1 of seed 001: the body (1-based) carrying each knife edge
EDGE_BODY = {"W1": 2, "W2": 3, "W3": 1, "W4": 1, "W5": 7}


def _ranks(C, m=17, rtol=1e-8):
    """numpy ranks of Phi_q, Psi and C with a relative threshold rtol * s_max."""
    return rank(C[:m], rtol), rank(C[m:], rtol), rank(C, rtol)


# ------------------------------------------------------------------------------------------
# fixtures: every compiled function is built once per module; no eager evaluation of the
# robot's C (eager jacfwd over 14 pairs costs seconds of op-by-op compilation)
# ------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def robot():
    return mobile_robot.build()


@pytest.fixture(scope="module")
def robot_terms(robot):
    """The steering manoeuvre of seed 001 (eq. 39 initial velocity, 20 s, 21 samples), and
    C, Phi, b (numpy) at q0 (index 0) followed by the 21 samples (indices 1..21). Integrated
    as seed 001 does (null space, Baumgarte), whose samples these tests hold at 1e-9 of Phi."""
    sim = jax.jit(
        lambda m, q, qd: mb.simulate(m, q, qd, 20.0, ts=ROBOT_TS, formulation="null_space")
    )
    traj = sim(robot, robot.q0, mobile_robot.initial_velocity(robot))
    qs = jnp.concatenate([robot.q0[None], traj.q])
    ts = jnp.concatenate([jnp.zeros(1), traj.ts])
    terms = jax.jit(jax.vmap(lambda q, t: (robot.C(q, t), robot.phi(q, t), robot.b(q, t))))
    C, phi, b = (np.asarray(x) for x in terms(qs, ts))
    return dict(ts=np.asarray(traj.ts), q=np.asarray(traj.q), C=C, phi=phi, b=b)


# ------------------------------------------------------------------------------------------
# 1. the mobile robot of seed 001, section 4
# ------------------------------------------------------------------------------------------
def test_robot_dimensions(robot, robot_terms):
    """Seed 001 section 4.2: n = 21 coordinates, m = 17 holonomic, h = 5 Pfaffian rows, so C
    (eq. 33) is 22 x 21; the mass matrix is 21 x 21 (section 4.3)."""
    assert (robot.n, robot.m, robot.h, robot.num_rows) == (21, 17, 5, 22)
    assert robot_terms["C"].shape[1:] == (22, 21)
    assert robot_terms["phi"].shape[1:] == (17,)
    assert robot.mass_matrix().shape == (21, 21)
    assert robot.q0.shape == (21,)
    assert len(robot.body_names) == 7


def test_robot_pair_names_and_rows(robot):
    """Row order of the Appendix of seed 001 (section 4.4 eliminates the paper's rows 6 and 21,
    0-based 5 = C's y row and 20 = W4)."""
    assert robot.pair_names == PAPER_PAIRS
    for name, (start, stop) in PAPER_ROWS.items():
        assert robot.rows(name) == slice(start, stop), name
    assert robot.rows("C").start + 1 == 5 and robot.rows("W4").start == 20
    np.testing.assert_array_equal(robot.holonomic_rows, np.arange(22) < 17)
    with pytest.raises(KeyError, match="no pair named 'Z'"):
        robot.rows("Z")


def test_robot_q0_and_edge_structure(robot, robot_terms):
    """q0 of eq. 34 (a = 0.05 m, dx = cx/2, dy = cy/2 - by with Table 3's bx, by, cx, cy
    recomputed here) and the sparsity of the Pfaffian matrix of section 4.2: each knife-edge row
    touches only the coordinates of the body of Table 1 (y and phi at q0, normal = global y)."""
    a = A_UNIT
    zeta = np.arctan(0.25)
    bx, by = a * np.sin(zeta), a * np.cos(zeta)
    cx = 4 * a - bx
    cy = np.sqrt(25 * a**2 - cx**2)
    dx, dy = cx / 2, cy / 2 - by
    q0 = np.array(
        [
            20 * a,
            0,
            0,
            24 * a,
            0,
            0,
            16 * a,
            0,
            0,
            20 * a + dx,
            dy,
            0,
            20 * a - dx,
            dy,
            0,
            20 * a,
            0,
            0,
            5 * a,
            0,
            0,
        ]
    )
    np.testing.assert_allclose(np.asarray(robot.q0), q0, rtol=0, atol=1e-15)
    C = robot_terms["C"][0]
    for name, body in EDGE_BODY.items():
        row = C[robot.rows(name)][0]
        cols = np.flatnonzero(np.abs(row) > 0)
        k = 3 * (body - 1)
        assert set(cols) <= {k, k + 1, k + 2}, name
        assert row[k + 1] == pytest.approx(1.0, abs=1e-15), name  # normal along global y


def test_robot_residual_at_q0(robot_terms):
    """Eq. 34's q0 is an assembled configuration: |Phi(q0, 0)| < 1e-12 (the geometry of
    Table 3 closes the steering linkage exactly)."""
    assert np.max(np.abs(robot_terms["phi"][0])) < 1e-12


def test_robot_ranks_at_q0(robot_terms):
    """Eq. 35: rank(Phi_q(q0)) = 17, rank(Psi(q0)) = 4, rank(C(q0)) = 20 (numpy matrix_rank
    with its default tolerance), so p = 22 - 20 = 2."""
    C = robot_terms["C"][0]
    assert np.linalg.matrix_rank(C[:17]) == 17
    assert np.linalg.matrix_rank(C[17:]) == 4
    assert np.linalg.matrix_rank(C) == 20


def test_robot_ranks_along_motion(robot_terms):
    """Eq. 35 holds "for any other nonsingular configuration": at the 21 samples of the
    manoeuvre, numpy ranks are 17, 4, 20. The trajectory satisfies Phi only to the integration
    drift (~1e-11), which lifts C's zero singular value to ~1e-13 (numpy's default threshold,
    ~1e-15, then reports 21 at some samples), so the threshold is relative (1e-8 s_max) and the
    gap is asserted (20th singular value > 1e-3 s_max, 21st < 1e-10 s_max)."""
    for k, C in enumerate(robot_terms["C"][1:]):
        assert _ranks(C) == (17, 4, 20), k
        s = np.linalg.svd(C, compute_uv=False)
        assert s[19] > 1e-3 * s[0] and s[20] < 1e-10 * s[0], (k, s[18:])
    assert np.max(np.abs(robot_terms["phi"][1:])) < 1e-9  # the samples are assembled


def test_robot_initial_velocity_eq39(robot_terms):
    """Eq. 39: every body moves along x0 at v = 0.1 m/s, and this qd0 satisfies the velocity
    constraints C(q0, 0) qd0 + b(q0, 0) = 0 (the steering starts at rest)."""
    qd0 = np.asarray(mobile_robot.initial_velocity(mobile_robot.build()))
    np.testing.assert_array_equal(qd0, np.tile([0.1, 0.0, 0.0], 7))
    C, b = robot_terms["C"][0], robot_terms["b"][0]
    assert np.max(np.abs(C @ qd0 + b)) < 1e-12


def test_robot_turns_right_then_left(robot_terms):
    """Fig. 2/3 of seed 001: the robot first turns right (platform heading phi_1 decreasing and
    negative during 3-5 s), then turns left (phi_1 increasing during 12-16 s). Note: with this
    steering profile phi_1 comes back towards 0 but stays slightly negative (~ -0.06 rad at
    20 s); what becomes positive later is the heading rate."""
    ts, q = robot_terms["ts"], robot_terms["q"]
    phi = q[:, 2]
    assert np.all(phi[(ts >= 3.0) & (ts <= 5.0)] < -0.1)
    assert np.all(np.diff(phi[(ts >= 1.0) & (ts <= 6.0)]) < 0.0)
    assert np.all(np.diff(phi[(ts >= 12.0) & (ts <= 16.0)]) > 0.0)
    assert phi[ts >= 16.0].max() - phi.min() > 0.5  # turned back by more than 0.5 rad
    assert q[-1, 1] < -0.3  # displaced to the right of x0


def test_robot_driver_distance(robot_terms):
    """Driver of joint H (seed 001 eq. 43): the distance from P (slider, s_P = (0, 10a)) to
    Q (platform, s_Q = (0, -10a)) along the platform's -y axis, evaluated in numpy from the
    simulated coordinates, equals 20a + delta(t) (1e-9), and at the plateaus of Fig. 2 it is
    20a + 0, +0.02 (turn right), 0, -0.02 (turn left), 0."""
    ts, q = robot_terms["ts"], robot_terms["q"]
    a = A_UNIT
    delta = mobile_robot.steering_profile(0.02)
    d = np.empty(len(ts))
    for k in range(len(ts)):
        r1, phi1 = q[k, 0:2], q[k, 2]
        r6, phi6 = q[k, 15:17], q[k, 17]
        P = r6 + rot(phi6) @ np.array([0.0, 10 * a])
        Q = r1 + rot(phi1) @ np.array([0.0, -10 * a])
        d[k] = (Q - P) @ (rot(phi1) @ np.array([0.0, -1.0]))
    expected = 20 * a + np.asarray(jax.vmap(delta)(jnp.asarray(ts)))
    np.testing.assert_allclose(d, expected, rtol=0, atol=1e-9)
    plateaus = {0.0: 0.0, 4.0: 0.02, 9.0: 0.0, 14.0: -0.02, 19.0: 0.0}
    for t, level in plateaus.items():
        k = int(np.flatnonzero(ts == t)[0])
        assert abs(d[k] - (20 * a + level)) < 1e-9, t


# ------------------------------------------------------------------------------------------
# 3. params -> Model under jit, vmap and grad
# ------------------------------------------------------------------------------------------
T_EVAL = 0.3
Q_SHIFT = 0.01


def _build(a):
    """Crank length a -> driven four-bar: geometry, masses (slender rods), the builder's
    closed-form q0 and the driver all depend on a."""
    return four_bar.build(a=a, omega=1.5)


def _terms(model):
    """(q0, Phi(q0 + shift), C(q0)) of a built four-bar."""
    q = model.q0
    return q, model.phi(q + Q_SHIFT, T_EVAL), model.C(q, T_EVAL)


_terms_jit = jax.jit(_terms)  # one compilation, shared by every build (same static layout)


def _scalars(a):
    """Two scalar functions of C(q0(a), t): its smallest singular value (C is a square 9 x 9,
    a non-trivial smooth function of a) and sum(W * C)^2 + sum(C^2) with fixed weights W."""
    C = _terms(_build(a))[2]
    W = jnp.arange(1.0, 1.0 + C.size).reshape(C.shape)
    return jnp.stack([jnp.linalg.svd(C, compute_uv=False)[-1], jnp.sum(W * C) ** 2 + jnp.sum(C**2)])


def _scalars_numpy(C):
    W = np.arange(1.0, 1.0 + C.size).reshape(C.shape)
    return np.array([np.linalg.svd(C, compute_uv=False)[-1], np.sum(W * C) ** 2 + np.sum(C**2)])


def test_build_under_jit_equals_eager():
    """jax.jit(L -> build(crank length L)) returns a Model equal to the eager build: same static
    layout, every array leaf equal to 1e-15, and equal C and Phi."""
    L = 0.12
    jitted = jax.jit(_build)(L)
    eager = _build(L)
    assert isinstance(jitted, mb.Model)
    assert jitted.pair_names == eager.pair_names and jitted.body_names == eager.body_names
    leaves_j, tree_j = jax.tree_util.tree_flatten(jitted)
    leaves_e, tree_e = jax.tree_util.tree_flatten(eager)
    assert tree_j == tree_e
    for x, y in zip(leaves_j, leaves_e):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-15)
    for x, y in zip(_terms_jit(jitted), _terms_jit(eager)):
        np.testing.assert_allclose(x, y, rtol=0, atol=1e-15)


def test_build_under_vmap_equals_loop():
    """vmap over 8 crank lengths (build and evaluate inside, and a vmapped Model with batched
    leaves) equals a Python loop of eager builds (1e-14)."""
    lengths = np.linspace(0.06, 0.13, 8)

    @jax.jit
    def batched(Ls):
        direct = jax.vmap(lambda a: _terms(_build(a)))(Ls)
        models = jax.vmap(_build)(Ls)
        return direct, models, jax.vmap(_terms)(models)

    direct, models, via_models = batched(jnp.asarray(lengths))
    assert models.q0.shape == (8, 9)
    for k, L in enumerate(lengths):
        ref = _terms_jit(_build(float(L)))
        for got, got2, want in zip(direct, via_models, ref):
            np.testing.assert_allclose(got[k], want, rtol=0, atol=1e-14)
            np.testing.assert_allclose(got2[k], want, rtol=0, atol=1e-14)


def test_build_gradient_matches_finite_differences():
    """jax.grad of scalar functions of C(q0(a), t) through the whole build (geometry, builder
    configuration, rows) equals central finite differences of the same scalars computed in
    numpy from C (h = 1e-5; relative 1e-7)."""
    a, h = 0.1, 1e-5
    grads = jax.jit(lambda a: [jax.grad(lambda x: _scalars(x)[k])(a) for k in range(2)])(a)
    plus = _scalars_numpy(np.asarray(_terms_jit(_build(a + h))[2]))
    minus = _scalars_numpy(np.asarray(_terms_jit(_build(a - h))[2]))
    fd = (plus - minus) / (2 * h)
    for g, f in zip(grads, fd):
        assert abs(f) > 1e-3
        assert abs(float(g) - f) <= 1e-7 * abs(f), (float(g), f)


# ------------------------------------------------------------------------------------------
# 6. build-time validation: clear messages naming the element
# ------------------------------------------------------------------------------------------
def _two_bodies():
    m = mb.Mechanism()
    b1 = m.body("b1", mass=1.0, inertia=0.1, q=(0.0, 0.0, 0.0))
    b2 = m.body("b2", mass=1.0, inertia=0.1, q=(1.0, 0.0, 0.0))
    return m, b1, b2


def test_duplicate_body_name():
    """A second body with a used name (or the reserved 'ground') is refused."""
    m, _, _ = _two_bodies()
    with pytest.raises(ValueError, match="'b1' is already used"):
        m.body("b1", mass=1.0, inertia=1.0)
    with pytest.raises(ValueError, match="'ground' is already used"):
        m.body("ground", mass=1.0, inertia=1.0)


def test_duplicate_pair_name():
    """Two elements with one name are refused; the message names it."""
    m, b1, b2 = _two_bodies()
    m.add(mb.Revolute("J", b1, b2, s_i=(0.5, 0.0), s_j=(-0.5, 0.0)))
    with pytest.raises(ValueError, match="'J' was already added"):
        m.add(mb.Distance("J", b1, b2, s_i=(0.0, 0.0), s_j=(0.0, 0.0), length=1.0))
    with pytest.raises(ValueError, match="'J' was already added"):
        m.add(mb.Torque("J", b1, 1.0))


@pytest.mark.parametrize("label", ["mass", "inertia"])
@pytest.mark.parametrize("value", [0.0, -1.0, np.nan, np.inf])
def test_bad_mass_or_inertia(label, value):
    """Non-positive or non-finite mass / inertia is refused, naming the body and the field."""
    m = mb.Mechanism()
    kwargs = {"mass": 1.0, "inertia": 1.0, label: value}
    with pytest.raises(ValueError, match=f"body 'bad': {label} = .* must be positive and finite"):
        m.body("bad", **kwargs)
    assert m.bodies == ()


def test_foreign_body_handle():
    """A handle (or the ground) of another Mechanism is refused when added, naming the element
    and the body."""
    m, b1, _ = _two_bodies()
    other = mb.Mechanism()
    alien = other.body("alien", mass=1.0, inertia=1.0)
    with pytest.raises(ValueError, match="Revolute 'R'.*'alien' belongs to another Mechanism"):
        m.add(mb.Revolute("R", b1, alien, s_i=(0.0, 0.0), s_j=(0.0, 0.0)))
    with pytest.raises(ValueError, match="Revolute 'R0'.*'ground' belongs to another Mechanism"):
        m.add(mb.Revolute("R0", other.ground, b1, s_i=(0.0, 0.0), s_j=(0.0, 0.0)))
    with pytest.raises(ValueError, match="KnifeEdge 'K'.*'alien' belongs to another Mechanism"):
        m.add(mb.KnifeEdge("K", alien, s=(0.0, 0.0), n=(0.0, 1.0)))
    with pytest.raises(ValueError, match="SpringDamper 'S'.*'alien' belongs to another"):
        m.add(
            mb.SpringDamper(
                "S",
                b1,
                alien,
                s_i=(0.0, 0.0),
                s_j=(0.0, 0.0),
                stiffness=1.0,
                damping=0.0,
                free_length=1.0,
            )
        )
    assert m.build().pair_names == ()  # nothing was added


@pytest.mark.parametrize(
    "make",
    [
        lambda b, g: mb.Revolute("self", b, b, s_i=(0.0, 0.0), s_j=(1.0, 0.0)),
        lambda b, g: mb.Distance("self", b, b, s_i=(0.0, 0.0), s_j=(1.0, 0.0), length=1.0),
        lambda b, g: mb.Translational("self", b, b, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)),
        lambda b, g: mb.Revolute("self", g, g, s_i=(0.0, 0.0), s_j=(1.0, 0.0)),
        lambda b, g: mb.RelativeAngleDriver("self", b, b, f=0.0),
        lambda b, g: mb.TranslationalDriver(
            "self", b, b, s_i=(0.0, 0.0), s_j=(0.0, 0.0), u=(1.0, 0.0), d=0.0
        ),
    ],
    ids=["revolute", "distance", "translational", "ground-ground", "angle-driver", "tr-driver"],
)
def test_pair_joining_body_to_itself(make):
    """A pair between a body and itself is refused at construction, naming the pair."""
    m, b1, _ = _two_bodies()
    with pytest.raises(ValueError, match="'self': joins body .* to itself"):
        make(b1, m.ground)


@pytest.mark.parametrize(
    "make,label",
    [
        (
            lambda i, j: mb.Translational("z", i, j, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 0.0)),
            "v",
        ),
        (
            lambda i, j: mb.TranslationalDriver(
                "z", i, j, s_i=(0.0, 0.0), s_j=(0.0, 0.0), u=(0.0, 0.0), d=0.0
            ),
            "u",
        ),
        (lambda i, j: mb.KnifeEdge("z", i, s=(0.0, 0.0), n=(0.0, 0.0)), "n"),
        (lambda i, j: mb.Parallel("z", i, j, a_i=(0.0, 0.0), a_j=(1.0, 0.0)), "a_i"),
        (
            lambda i, j: mb.PinInSlot("z", i, j, s_i=(0.0, 0.0), s_j=(0.0, 0.0), a_i=(0.0, 0.0)),
            "a_i",
        ),
    ],
    ids=["translational-v", "driver-u", "knife-edge-n", "parallel-a_i", "pin-in-slot-a_i"],
)
def test_zero_length_direction(make, label):
    """A zero direction vector is refused at construction, naming the element and field."""
    _, b1, b2 = _two_bodies()
    with pytest.raises(ValueError, match=f"'z': {label} has zero length"):
        make(b1, b2)


def test_valid_mechanism_builds_and_traced_values_skip_checks():
    """Control: the same elements with valid data build (so the errors above come from the
    checks), and traced masses are accepted under jit (values unknown at trace time)."""
    m, b1, b2 = _two_bodies()
    m.add(mb.Revolute("R", m.ground, b1, s_i=(0.0, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.Translational("T", b2, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.KnifeEdge("K", b1, s=(0.0, 0.0), n=(0.0, 1.0)))
    model = m.build()
    assert model.pair_names == ("R", "T", "K") and model.n == 6

    def build(mass):
        mm = mb.Mechanism()
        mm.body("x", mass=mass, inertia=1.0)
        return mm.build().masses

    np.testing.assert_array_equal(jax.jit(build)(2.0), [2.0])
