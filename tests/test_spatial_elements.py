"""The spatial elements (jaxmb.elements.spatial) against the hand-derived numpy oracle.

Each element defines only a residual on q (7 coordinates per body, quaternions of any length);
the model will take C = dg/dv with qdot = T(q) v. For every joint and driver, at random states
that satisfy nothing (quaternions deliberately not of unit length):

(a) the residual equals the oracle's (tests/oracle/spatial.py, numpy, no jax);
(b) dPhi/dq (jax.jacfwd) composed with the oracle's T(q) equals the oracle's hand-derived
    Jacobian in the velocity coordinates (rdot global, omega' body frame);
(c) a central difference of the residual along the motion with velocity v (the oracle's
    retraction) equals C v + b: step h = 1e-5, truncation h^2 / 6 |Phi'''| ~ 1e-11 and rounding
    eps |Phi| / h ~ 1e-11 for quantities O(1-10), so 1e-7 relative leaves margin and still
    catches any wrong term (those are O(1));
(d) the residual does not change when a quaternion is scaled by 2.5;
(e) at a configuration built to satisfy the joint the residual is zero and the joint leaves
    the catalogue's degrees of freedom (the spatial note, section 3): 6 b - rank C;
(f) the time derivative of g = C v + b along a motion (jax: a JVP of the library's velocity
    residual, so the second derivatives gamma is made of) equals a central difference of the
    oracle's C(q(tau)) v(tau) + b(t + tau).

Forces: T(q)^T Q equals the oracle's v-space force ((f, s x A^T f) for a point force), the
virtual work Q . T(q) v = f . (velocity of the point), springs lose potential at the rate of
their power. The rotation driver stays smooth and on its angle across +-pi. Each constructor
refuses a 2-vector, a non-finite value, a zero axis and a self-joint, naming the element.

One compiled program per element type and body pairing (`_pair_terms`, `_force_terms`).
"""

import dataclasses
import functools
from collections.abc import Callable

import equinox as eqx
import jax
import jax.flatten_util
import jax.numpy as jnp
import numpy as np
import pytest
from oracle import spatial as hand

from jaxmb import drive
from jaxmb._bodies import SPATIAL, quaternion as body_quaternion
from jaxmb.elements import spatial as sp
from jaxmb.elements.geometry import Body
from jaxmb.elements.spatial import quaternion

ALGEBRA_TOL = 1e-12
FD_STEP = 1e-5
FD_RTOL = 1e-7
T_BUILD = 0.7  # the time at which the drivers' build configuration satisfies them
NUM_STATES = 3

G = None
HANDLES = {0: Body("b0", 0, 0), 1: Body("b1", 1, 0), G: Body("ground", -1, 0)}
PAIRINGS = [(0, 1), (G, 0), (0, G)]


def num_bodies(i, j):
    return sum(k is not G for k in (i, j))


# ------------------------------------------------------------------------------------------------
# states
# ------------------------------------------------------------------------------------------------
def random_q(rng, count):
    """Random poses; quaternions of random length in [0.5, 2] (nothing may depend on it)."""
    out = []
    for _ in range(count):
        p = rng.normal(size=4)
        out.append(
            np.concatenate([rng.uniform(-1, 1, 3), p / np.linalg.norm(p) * rng.uniform(0.5, 2)])
        )
    return np.concatenate(out)


def scaled(q, factor=2.5):
    q = np.array(q).reshape(-1, 7)
    q[:, 3:] *= factor
    return q.reshape(-1)


def P(q, k, s):
    r, A = hand.pose(q, k)
    return r + A @ s


def A(q, k):
    return hand.pose(q, k)[1]


def r(q, k):
    return hand.pose(q, k)[0]


def perpendicular(rng, h):
    """A random unit vector perpendicular to h."""
    w = np.cross(h, rng.normal(size=3))
    return w / np.linalg.norm(w)


def vanishing_harmonic(rng, value, shape=()):
    """(drive, oracle f) with f(T_BUILD) = value: value + a cos(w t + pi/2 - w T_BUILD)."""
    a, w = rng.uniform(0.3, 1.0, shape), rng.uniform(0.5, 2.0)
    phase = np.pi / 2 - w * T_BUILD
    module = drive.Harmonic(amplitude=a, omega=w, phase=phase, offset=value)

    def f(t):
        return (
            value + a * np.cos(w * t + phase),
            -a * w * np.sin(w * t + phase),
            -a * w**2 * np.cos(w * t + phase),
        )

    return module, f


# ------------------------------------------------------------------------------------------------
# cases: built from a configuration q0 that satisfies them
# ------------------------------------------------------------------------------------------------
@dataclasses.dataclass
class Case:
    kind: str
    make: Callable  # (rng, i, j, q0) -> (element, oracle(q, t))
    dof: int  # the catalogue's degrees of freedom left


def spherical(rng, i, j, q0):
    s_i = rng.uniform(-1, 1, 3)
    s_j = A(q0, j).T @ (P(q0, i, s_i) - r(q0, j))
    return sp.Spherical("joint", HANDLES[i], HANDLES[j], s_i=s_i, s_j=s_j), (
        lambda q, t: hand.spherical(q, i, s_i, j, s_j)
    )


def _aligned(rng, i, j, q0, along=0.0):
    """s_i, axis_i at random; s_j on the axis `along` from P_i, axis_j the same line."""
    s_i, axis_i = rng.uniform(-1, 1, 3), rng.normal(size=3) * 2.0
    h = A(q0, i) @ hand.unit(axis_i)
    s_j = A(q0, j).T @ (P(q0, i, s_i) + along * h - r(q0, j))
    return s_i, axis_i, s_j, 0.7 * A(q0, j).T @ h


def revolute(rng, i, j, q0):
    s_i, axis_i, s_j, axis_j = _aligned(rng, i, j, q0)
    e = sp.Revolute("joint", HANDLES[i], HANDLES[j], s_i, s_j, axis_i, axis_j)
    return e, lambda q, t: hand.revolute(q, i, s_i, axis_i, j, s_j, axis_j)


def universal(rng, i, j, q0):
    s_i, axis_i, s_j, _ = _aligned(rng, i, j, q0)
    axis_j = 1.3 * A(q0, j).T @ perpendicular(rng, A(q0, i) @ axis_i)
    e = sp.Universal("joint", HANDLES[i], HANDLES[j], s_i, s_j, axis_i, axis_j)
    e = sp.bind_reference(e, A(q0, i), A(q0, j))
    return e, lambda q, t: hand.universal(q, i, s_i, axis_i, j, s_j, axis_j)


def cylindrical(rng, i, j, q0):
    s_i, axis_i, s_j, axis_j = _aligned(rng, i, j, q0, along=rng.uniform(-1, 1))
    e = sp.Cylindrical("joint", HANDLES[i], HANDLES[j], s_i, s_j, axis_i, axis_j)
    return e, lambda q, t: hand.cylindrical(q, i, s_i, axis_i, j, s_j, axis_j)


def prismatic(rng, i, j, q0):
    s_i, axis_i, s_j, axis_j = _aligned(rng, i, j, q0, along=rng.uniform(-1, 1))
    e = sp.Prismatic("joint", HANDLES[i], HANDLES[j], s_i, s_j, axis_i, axis_j)
    e = sp.bind_reference(e, A(q0, i), A(q0, j))
    R0 = A(q0, i).T @ A(q0, j)
    return e, lambda q, t: hand.prismatic(q, i, s_i, axis_i, j, s_j, axis_j, R0)


def weld(rng, i, j, q0):
    s_i = rng.uniform(-1, 1, 3)
    s_j = A(q0, j).T @ (P(q0, i, s_i) - r(q0, j))
    e = sp.Weld("joint", HANDLES[i], HANDLES[j], s_i, s_j).bind_reference(A(q0, i), A(q0, j))
    R0 = A(q0, i).T @ A(q0, j)
    return e, lambda q, t: hand.weld(q, i, s_i, j, s_j, R0)


def distance(rng, i, j, q0):
    s_i, s_j = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    length = np.linalg.norm(P(q0, j, s_j) - P(q0, i, s_i))
    e = sp.Distance("joint", HANDLES[i], HANDLES[j], s_i, s_j, length)
    return e, lambda q, t: hand.distance(q, i, s_i, j, s_j, length)


def point_on_line(rng, i, j, q0):
    s_i, axis_i, s_j, _ = _aligned(rng, i, j, q0, along=rng.uniform(-1, 1))
    e = sp.PointOnLine("joint", HANDLES[i], HANDLES[j], s_i, s_j, axis_i)
    return e, lambda q, t: hand.point_on_line(q, i, s_i, axis_i, j, s_j)


def point_on_plane(rng, i, j, q0):
    s_i, normal_i = rng.uniform(-1, 1, 3), rng.normal(size=3)
    in_plane = perpendicular(rng, A(q0, i) @ normal_i) * rng.uniform(0.2, 1)
    s_j = A(q0, j).T @ (P(q0, i, s_i) + in_plane - r(q0, j))
    e = sp.PointOnPlane("joint", HANDLES[i], HANDLES[j], s_i, s_j, normal_i)
    return e, lambda q, t: hand.point_on_plane(q, i, s_i, normal_i, j, s_j)


def parallel_axes(rng, i, j, q0):
    axis_i = rng.normal(size=3)
    axis_j = -2.0 * A(q0, j).T @ A(q0, i) @ axis_i  # antiparallel satisfies it too
    e = sp.ParallelAxes("joint", HANDLES[i], HANDLES[j], axis_i, axis_j)
    return e, lambda q, t: hand.parallel_axes(q, i, axis_i, j, axis_j)


def planar(rng, i, j, q0):
    s_i, axis_i, _, axis_j = _aligned(rng, i, j, q0)
    in_plane = perpendicular(rng, A(q0, i) @ axis_i) * rng.uniform(0.2, 1)
    s_j = A(q0, j).T @ (P(q0, i, s_i) + in_plane - r(q0, j))
    e = sp.Planar("joint", HANDLES[i], HANDLES[j], s_i, s_j, axis_i, axis_j)
    return e, lambda q, t: hand.planar(q, i, s_i, axis_i, j, s_j, axis_j)


def revolute_driver(rng, i, j, q0):
    _, axis_i, _, axis_j = _aligned(rng, i, j, q0)
    module, f = vanishing_harmonic(rng, 0.0)  # the angle is zero at the build orientations
    e = sp.RevoluteDriver("driver", HANDLES[i], HANDLES[j], axis_i, axis_j, module)
    e = e.bind_reference(A(q0, i), A(q0, j))
    R0 = A(q0, i).T @ A(q0, j)
    return e, lambda q, t: hand.revolute_driver(q, t, i, axis_i, j, axis_j, R0, f)


def prismatic_driver(rng, i, j, q0):
    s_i, s_j, axis_i = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3), rng.normal(size=3)
    value = hand.unit(A(q0, i) @ axis_i) @ (P(q0, j, s_j) - P(q0, i, s_i))
    module, f = vanishing_harmonic(rng, value)
    e = sp.PrismaticDriver("driver", HANDLES[i], HANDLES[j], s_i, s_j, axis_i, module)
    return e, lambda q, t: hand.prismatic_driver(q, t, i, s_i, axis_i, j, s_j, f)


def point_driver(rng, i, j, q0):
    k = i if i is not G else j
    s = rng.uniform(-1, 1, 3)
    module, f = vanishing_harmonic(rng, P(q0, k, s), shape=(3,))
    e = sp.PointDriver("driver", HANDLES[k], s, module)
    return e, lambda q, t: hand.point_driver(q, t, k, s, f)


def angular_velocity_driver(rng, i, j, q0):
    axis_i = rng.normal(size=3)
    module, f = vanishing_harmonic(rng, 0.0)
    e = sp.AngularVelocityDriver("driver", HANDLES[i], HANDLES[j], axis_i, module)
    return e, lambda q, t: hand.angular_velocity_driver(q, t, i, axis_i, j, f)


CASES = {
    c.kind: c
    for c in [
        Case("Spherical", spherical, 3),
        Case("Revolute", revolute, 1),
        Case("Universal", universal, 2),
        Case("Cylindrical", cylindrical, 2),
        Case("Prismatic", prismatic, 1),
        Case("Weld", weld, 0),
        Case("Distance", distance, 5),
        Case("PointOnLine", point_on_line, 4),
        Case("PointOnPlane", point_on_plane, 5),
        Case("ParallelAxes", parallel_axes, 4),
        Case("Planar", planar, 3),
        Case("RevoluteDriver", revolute_driver, 5),
        Case("PrismaticDriver", prismatic_driver, 5),
        Case("PointDriver", point_driver, 3),
        Case("AngularVelocityDriver", angular_velocity_driver, 5),
    ]
}


# ------------------------------------------------------------------------------------------------
# the library side: one compiled program per element type and pairing
# ------------------------------------------------------------------------------------------------
@eqx.filter_jit
def _pair_terms(element, q, qdot, qddot, t):
    """(g, J, dg): the residual (Pfaffian: the velocity residual at qdot), its Jacobian in q
    (Pfaffian: in qdot) and d/dtau of the velocity residual along (qdot, qddot, 1)."""
    if element.holonomic:
        g = element.residual(q, t)
        J = jax.jacfwd(element.residual)(q, t)
    else:
        g = element.velocity_residual(q, qdot, t)
        J = jax.jacfwd(element.velocity_residual, argnums=1)(q, qdot, t)
    dg = jax.jvp(element.velocity_residual, (q, qdot, t), (qdot, qddot, jnp.ones_like(t)))[1]
    return g, J, dg


def pair_terms(element, q, qdot, qddot, t):
    args = (jnp.asarray(q), jnp.asarray(qdot), jnp.asarray(qddot), jnp.asarray(t, jnp.float64))
    return tuple(np.asarray(x) for x in _pair_terms(element, *args))


@dataclasses.dataclass
class Draw:
    element: object
    oracle: Callable
    q0: np.ndarray
    states: list  # (q, v, a, t)


# every kind between two bodies and with the ground as body i; the ground as body j where the
# element treats its two sides differently (a reference, a point or axis on one side only)
GROUND_J = {"Prismatic", "Weld", "PointOnPlane", "RevoluteDriver", "AngularVelocityDriver"}
PARAMS = [
    (kind, pairing)
    for kind in CASES
    for pairing in PAIRINGS
    if pairing != (0, G) or kind in GROUND_J
]


@functools.cache
def draw_of(kind, i, j):
    """The case built at a random q0, with random states (seeded by the case)."""
    rng = np.random.default_rng([list(CASES).index(kind), PAIRINGS.index((i, j))])
    nb = num_bodies(i, j)
    q0 = random_q(rng, nb)
    element, oracle = CASES[kind].make(rng, i, j, q0)
    states = [
        (random_q(rng, nb), rng.uniform(-1.5, 1.5, 6 * nb), rng.uniform(-1.5, 1.5, 6 * nb), t)
        for t in rng.uniform(0.2, 2.8, NUM_STATES)
    ]
    return Draw(element, oracle, q0, states)


def pair_params():
    return pytest.mark.parametrize(
        "kind, pairing", PARAMS, ids=[f"{k}-{i}-{j}" for k, (i, j) in PARAMS]
    )


def oracle_g(draw, q, v, t):
    """The oracle's (g, C): holonomic g = Phi, Pfaffian g = C v + b."""
    if draw.element.holonomic:
        phi, C, *_ = draw.oracle(q, t)
        return phi, C
    C, b = draw.oracle(q, t)
    return C @ v + b, C


def oracle_rate(draw, q, v, t):
    """C v + b, the oracle's velocity residual."""
    if draw.element.holonomic:
        _, C, *b = draw.oracle(q, t)
        return C @ v + (b[0] if b else 0.0)
    C, b = draw.oracle(q, t)
    return C @ v + b


def library_C(draw, q, v, t):
    qdot = hand.T(q) @ v
    g, J, _ = pair_terms(draw.element, q, qdot, np.zeros_like(qdot), t)
    return g, J @ hand.T(q)


def test_every_spatial_element_has_a_case():
    pairs = {n for n in dir(sp) if isinstance(getattr(sp, n), type)}
    pairs = {n for n in pairs if issubclass(getattr(sp, n), sp.AbstractSpatialElement)}
    pairs -= {n for n in pairs if n.startswith("Abstract")}
    forces = {"Force", "Torque", "SpringDamper", "RotationalSpringDamper"}
    assert pairs - forces == set(CASES)
    assert all(getattr(sp, k).dim == 3 for k in pairs)


@pair_params()
def test_residual_and_jacobian_match_oracle(kind, pairing):
    """(a) residual and (b) C = dPhi/dq T(q) against the hand-derived rows."""
    draw = draw_of(kind, *pairing)
    for q, v, _, t in draw.states:
        g, C = library_C(draw, q, v, t)
        g_hand, C_hand = oracle_g(draw, q, v, t)
        assert g.shape == (draw.element.num_rows,)
        np.testing.assert_allclose(
            g, g_hand, rtol=0, atol=ALGEBRA_TOL * max(1, np.abs(g_hand).max())
        )
        np.testing.assert_allclose(
            C, C_hand, rtol=0, atol=ALGEBRA_TOL * max(1, np.abs(C_hand).max())
        )


@pair_params()
def test_velocity_residual_matches_central_difference(kind, pairing):
    """(c) (Phi(q(h)) - Phi(q(-h))) / 2h along the motion with velocity v equals C v + b
    (holonomic); a Pfaffian row is linear in qdot: g(T v) = C v + b exactly."""
    draw = draw_of(kind, *pairing)
    for q, v, _, t in draw.states:
        qdot = hand.T(q) @ v
        zero = np.zeros_like(qdot)
        rate = oracle_rate(draw, q, v, t)
        if draw.element.holonomic:
            plus = pair_terms(
                draw.element, hand.motion(q, v, 0 * v, FD_STEP), qdot, zero, t + FD_STEP
            )[0]
            minus = pair_terms(
                draw.element, hand.motion(q, v, 0 * v, -FD_STEP), qdot, zero, t - FD_STEP
            )[0]
            fd = (plus - minus) / (2 * FD_STEP)
            np.testing.assert_allclose(fd, rate, rtol=FD_RTOL, atol=FD_RTOL * np.abs(rate).max())
        else:
            g = pair_terms(draw.element, q, qdot, zero, t)[0]
            np.testing.assert_allclose(
                g, rate, rtol=0, atol=ALGEBRA_TOL * max(1, np.abs(rate).max())
            )


@pair_params()
def test_invariant_to_quaternion_scale(kind, pairing):
    """(d) Scaling every quaternion (and its rate) by 2.5 changes nothing."""
    draw = draw_of(kind, *pairing)
    q, v, _, t = draw.states[0]
    qdot = hand.T(q) @ v
    zero = np.zeros_like(qdot)
    g = pair_terms(draw.element, q, qdot, zero, t)[0]
    g_scaled = pair_terms(draw.element, scaled(q), scaled(qdot), zero, t)[0]
    np.testing.assert_allclose(g_scaled, g, rtol=0, atol=ALGEBRA_TOL * max(1, np.abs(g).max()))


@pair_params()
def test_satisfied_at_build_configuration_with_catalogue_dof(kind, pairing):
    """(e) Zero residual where the joint was built to hold; 6 b - rank C = 6 (b - 1) + dof."""
    draw = draw_of(kind, *pairing)
    q0 = draw.q0
    nb = len(q0) // 7
    g, C = library_C(draw, q0, np.zeros(6 * nb), T_BUILD)
    np.testing.assert_allclose(g, 0.0, atol=1e-12)
    singular = np.linalg.svd(C, compute_uv=False)
    rank = int(np.sum(singular > 1e-9 * singular.max()))
    assert rank == draw.element.num_rows
    assert 6 * nb - rank == 6 * (nb - 1) + CASES[kind].dof


@pair_params()
def test_second_derivative_matches_central_difference(kind, pairing):
    """(f) d/dtau [C v + b] along a motion with accelerations a: jax's JVP of the velocity
    residual along (qdot, qddot, 1) against a central difference of the oracle's C(q(tau))
    v(tau) + b(t + tau)."""
    draw = draw_of(kind, *pairing)
    for q, v, a, t in draw.states:
        qdot, qdd = hand.T(q) @ v, hand.qddot(q, v, a)
        dg = pair_terms(draw.element, q, qdot, qdd, t)[2]

        def g(tau):
            return oracle_rate(draw, hand.motion(q, v, a, tau), v + tau * a, t + tau)

        fd = (g(FD_STEP) - g(-FD_STEP)) / (2 * FD_STEP)
        np.testing.assert_allclose(dg, fd, rtol=FD_RTOL, atol=FD_RTOL * max(1, np.abs(fd).max()))


# ------------------------------------------------------------------------------------------------
# forces
# ------------------------------------------------------------------------------------------------
def point_force_case(rng, i, j, q0):
    k = i if i is not G else j
    s, f = rng.uniform(-1, 1, 3), rng.uniform(-2, 2, 3)
    e = sp.Force("force", HANDLES[k], s, f)
    return e, lambda q, v, t: (hand.point_force(q, k, s, f), None)


def torque_case(rng, i, j, q0):
    k = i if i is not G else j
    tau = rng.uniform(-2, 2, 3)
    e = sp.Torque("torque", HANDLES[k], tau)
    return e, lambda q, v, t: (hand.torque(q, k, tau), None)


def spring_case(rng, i, j, q0):
    s_i, s_j = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    k, c, l0 = rng.uniform(1, 5), rng.uniform(0.1, 1), rng.uniform(0.1, 1)
    e = sp.SpringDamper("spring", HANDLES[i], HANDLES[j], s_i, s_j, k, c, l0)
    return e, lambda q, v, t: hand.spring_damper(q, v, i, s_i, j, s_j, k, c, l0)


def torsion_case(rng, i, j, q0):
    _, axis_i, _, axis_j = _aligned(rng, i, j, q0)
    k, c, theta0 = rng.uniform(1, 5), rng.uniform(0.1, 1), rng.uniform(-2, 2)
    e = sp.RotationalSpringDamper("torsion", HANDLES[i], HANDLES[j], axis_i, axis_j, k, c, theta0)
    e = sp.bind_reference(e, A(q0, i), A(q0, j))
    R0 = A(q0, i).T @ A(q0, j)
    return e, lambda q, v, t: hand.rotational_spring_damper(
        q, v, i, axis_i, j, axis_j, R0, k, c, theta0
    )


FORCE_CASES = {
    "Force": point_force_case,
    "Torque": torque_case,
    "SpringDamper": spring_case,
    "RotationalSpringDamper": torsion_case,
}
FORCE_PARAMS = [
    (kind, pairing)
    for kind in FORCE_CASES
    for pairing in ([(0, 1), (G, 0)] if "Spring" in kind else [(0, 1)])
]


@eqx.filter_jit
def _force_terms(element, q, qdot, t):
    """(Q, dV/dt along qdot) (dV 0 for elements without a potential)."""
    Q = element.generalized_force(None, q, qdot, t)
    if hasattr(element, "potential"):
        return Q, jax.jvp(element.potential, (q,), (qdot,))[1]
    return Q, jnp.zeros(())


@functools.cache
def force_draw(kind, i, j):
    rng = np.random.default_rng([100 + list(FORCE_CASES).index(kind), PAIRINGS.index((i, j))])
    nb = num_bodies(i, j)
    q0 = random_q(rng, nb)
    element, oracle = FORCE_CASES[kind](rng, i, j, q0)
    states = [(random_q(rng, nb), rng.uniform(-1.5, 1.5, 6 * nb), 0.5) for _ in range(NUM_STATES)]
    return element, oracle, states


def force_terms(element, q, qdot, t):
    out = _force_terms(element, jnp.asarray(q), jnp.asarray(qdot), jnp.asarray(t, jnp.float64))
    return tuple(np.asarray(x) for x in out)


force_params = pytest.mark.parametrize(
    "kind, pairing", FORCE_PARAMS, ids=[f"{k}-{i}-{j}" for k, (i, j) in FORCE_PARAMS]
)


@force_params
def test_force_pulls_back_to_oracle(kind, pairing):
    """T(q)^T Q (q-space, a VJP) equals the oracle's v-space generalized force: (f, s x A^T f)
    for a point force, (0, A^T tau) for a torque, -T D^T u for a spring; the same for every
    quaternion scale."""
    element, oracle, states = force_draw(kind, *pairing)
    for q, v, t in states:
        Q_hand, _ = oracle(q, v, t)
        for factor in (1.0, 2.5):
            qs = scaled(q, factor)
            Q = force_terms(element, qs, hand.T(qs) @ v, t)[0]
            assert Q.shape == q.shape
            np.testing.assert_allclose(hand.T(qs).T @ Q, Q_hand, rtol=0, atol=ALGEBRA_TOL * 10)


@force_params
def test_force_virtual_work(kind, pairing):
    """Q . T(q) v is the power of the applied load: f . (velocity of the point),
    tau . omega (global), -T dl/dt for a spring."""
    element, oracle, states = force_draw(kind, *pairing)
    for q, v, t in states:
        Q = force_terms(element, q, hand.T(q) @ v, t)[0]
        if kind == "Force":
            _, J = hand.point(q, HANDLES_INDEX[element.body], np.asarray(element.s))
            power = np.asarray(element.f(t)) @ (J @ v)
        elif kind == "Torque":
            k = HANDLES_INDEX[element.body]
            omega = hand.pose(q, k)[1] @ hand.velocity(v, k)[1]
            power = np.asarray(element.tau(t)) @ omega
        else:
            power = oracle(q, v, t)[0] @ v
        np.testing.assert_allclose(Q @ (hand.T(q) @ v), power, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["SpringDamper", "RotationalSpringDamper"])
def test_spring_loses_potential_at_the_rate_of_its_power(kind):
    """Without damping, dV/dt = -Q . qdot, and V is the oracle's k (l - l0)^2 / 2 (or
    k delta^2 / 2)."""
    element, oracle, states = force_draw(kind, 0, 1)
    element = dataclasses.replace(element, damping=0.0)
    for q, v, t in states:
        qdot = hand.T(q) @ v
        Q, dV = force_terms(element, q, qdot, t)
        np.testing.assert_allclose(dV, -Q @ qdot, rtol=1e-12, atol=1e-12)
        V = np.asarray(element.potential(jnp.asarray(q)))
        _, V_hand = oracle(q, v, t)
        np.testing.assert_allclose(V, V_hand, rtol=1e-12)


HANDLES_INDEX = {body: k for k, body in HANDLES.items()}


# ------------------------------------------------------------------------------------------------
# the rotation driver across +-pi
# ------------------------------------------------------------------------------------------------
def turned(q0, k, point, axis, theta):
    """q0 with body k turned by theta about the global axis through `point`."""
    R = hand.rot(hand.qexp(theta * axis))
    q = np.array(q0, float)
    r = q[7 * k : 7 * k + 3]
    q[7 * k : 7 * k + 3] = point + R @ (r - point)
    q[7 * k + 3 : 7 * k + 7] = hand.qmul(hand.qexp(theta * axis), q[7 * k + 3 : 7 * k + 7])
    return q


@eqx.filter_jit
def _sweep(elements, qs, ts):
    def rows(q, t):
        return jnp.concatenate([e.residual(q, t) for e in elements])

    def C(q, t):
        return jax.jacfwd(rows)(q, t)

    return jax.vmap(rows)(qs, ts), jax.vmap(C)(qs, ts)


def test_revolute_driver_is_smooth_and_on_its_angle_across_pi():
    """A revolute between the ground and a body, driven by f(t) = t (Linear), swept through
    theta = pi and -pi: the driver row is zero on the driven angle (no jump, no branch), the
    row with f held at pi is sin(theta - pi) exactly, and revolute + driver leave 0 dof."""
    rng = np.random.default_rng(5)
    q0 = random_q(rng, 1)
    s_i, axis_i = rng.uniform(-1, 1, 3), rng.normal(size=3)
    s_j = A(q0, 0).T @ (s_i - r(q0, 0))
    axis_j = A(q0, 0).T @ axis_i
    body = HANDLES[0]
    joint = sp.Revolute("hinge", HANDLES[G], body, s_i, s_j, axis_i, axis_j)
    driver = sp.RevoluteDriver("motor", HANDLES[G], body, axis_i, axis_j, drive.Linear(slope=1.0))
    driver = sp.bind_reference(driver, np.eye(3), A(q0, 0))
    held = dataclasses.replace(driver, f=np.pi)
    thetas = np.concatenate(
        [np.linspace(np.pi - 0.2, np.pi + 0.2, 41), np.linspace(-np.pi - 0.2, -np.pi + 0.2, 41)]
    )
    qs = np.stack([turned(q0, 0, s_i, hand.unit(axis_i), th) for th in thetas])
    phi, C = (
        np.asarray(x) for x in _sweep((joint, driver, held), jnp.asarray(qs), jnp.asarray(thetas))
    )
    np.testing.assert_allclose(phi[:, :5], 0.0, atol=1e-12)  # the sweep keeps the revolute
    np.testing.assert_allclose(phi[:, 5], 0.0, atol=1e-12)  # on the driven angle throughout
    np.testing.assert_allclose(phi[:, 6], np.sin(thetas - np.pi), atol=1e-12)
    for q, C_q in zip(qs, C):
        Cv = (C_q @ hand.T(q))[:6]
        assert np.linalg.matrix_rank(Cv, tol=1e-9) == 6  # revolute + driver: 0 dof left


# ------------------------------------------------------------------------------------------------
# reference orientations
# ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "make",
    [
        lambda b, c: sp.Prismatic("slide", b, c, (0, 0, 0), (0, 0, 0), (1, 0, 0), (1, 0, 0)),
        lambda b, c: sp.Weld("glue", b, c),
        lambda b, c: sp.RevoluteDriver("motor", b, c, (0, 0, 1), (0, 0, 1), 0.0),
        lambda b, c: sp.RotationalSpringDamper("coil", b, c, (0, 0, 1), (0, 0, 1), 1.0, 0.0),
    ],
)
def test_unbound_reference_is_refused(make):
    element = make(HANDLES[0], HANDLES[1])
    q = jnp.asarray(random_q(np.random.default_rng(0), 2))
    with pytest.raises(ValueError, match=f"'{element.name}'.*not bound.*bind_reference"):
        if isinstance(element, sp.AbstractSpatialForceElement):
            element.generalized_force(None, q, q, 0.0)
        else:
            element.residual(q, 0.0)
    bound = sp.bind_reference(element, np.eye(3), np.eye(3))
    assert bound.reference.shape == (3, 3) and element.reference is None


def test_universal_checks_perpendicular_axes_when_bound():
    joint = sp.Universal(
        "cross", HANDLES[0], HANDLES[1], (0, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0)
    )
    assert sp.bind_reference(joint, np.eye(3), np.eye(3)) is joint
    with pytest.raises(ValueError, match="Universal 'cross'.*perpendicular"):
        sp.bind_reference(joint, np.eye(3), hand.rot(hand.qexp([0.0, 0.0, 0.3])))


def test_bind_reference_leaves_other_elements_alone():
    joint = sp.Spherical("ball", HANDLES[0], HANDLES[1], (0, 0, 0), (0, 0, 0))
    assert sp.bind_reference(joint, np.eye(3), np.eye(3)) is joint


# ------------------------------------------------------------------------------------------------
# bad input: every constructor names itself
# ------------------------------------------------------------------------------------------------
V, H = (0.1, 0.2, 0.3), (0.0, 0.0, 1.0)
CONSTRUCTORS = {
    # class: (keyword arguments, vector fields, axis fields, two bodies)
    sp.Spherical: (dict(s_i=V, s_j=V), ("s_i", "s_j"), (), True),
    sp.Revolute: (
        dict(s_i=V, s_j=V, axis_i=H, axis_j=H),
        ("s_i", "s_j"),
        ("axis_i", "axis_j"),
        True,
    ),
    sp.Universal: (
        dict(s_i=V, s_j=V, axis_i=H, axis_j=(1.0, 0, 0)),
        ("s_i",),
        ("axis_i", "axis_j"),
        True,
    ),
    sp.Cylindrical: (dict(s_i=V, s_j=V, axis_i=H, axis_j=H), ("s_j",), ("axis_i", "axis_j"), True),
    sp.Prismatic: (dict(s_i=V, s_j=V, axis_i=H, axis_j=H), ("s_i",), ("axis_i", "axis_j"), True),
    sp.Weld: (dict(s_i=V, s_j=V), ("s_i", "s_j"), (), True),
    sp.Distance: (dict(s_i=V, s_j=V, length=1.0), ("s_i", "s_j"), (), True),
    sp.PointOnLine: (dict(s_i=V, s_j=V, axis_i=H), ("s_i",), ("axis_i",), True),
    sp.PointOnPlane: (dict(s_i=V, s_j=V, normal_i=H), ("s_j",), ("normal_i",), True),
    sp.ParallelAxes: (dict(axis_i=H, axis_j=H), (), ("axis_i", "axis_j"), True),
    sp.Planar: (dict(s_i=V, s_j=V, axis_i=H, axis_j=H), ("s_i",), ("axis_i", "axis_j"), True),
    sp.RevoluteDriver: (dict(axis_i=H, axis_j=H, f=0.0), (), ("axis_i", "axis_j"), True),
    sp.PrismaticDriver: (dict(s_i=V, s_j=V, axis_i=H, f=0.0), ("s_i",), ("axis_i",), True),
    sp.AngularVelocityDriver: (dict(axis_i=H, f=1.0), (), ("axis_i",), True),
    sp.SpringDamper: (
        dict(s_i=V, s_j=V, stiffness=1.0, damping=0.0, free_length=1.0),
        ("s_i", "s_j"),
        (),
        True,
    ),
    sp.RotationalSpringDamper: (
        dict(axis_i=H, axis_j=H, stiffness=1.0, damping=0.0),
        (),
        ("axis_i", "axis_j"),
        True,
    ),
    sp.PointDriver: (dict(s=V, f=V), ("s",), (), False),
    sp.Force: (dict(s=V, f=V), ("s",), (), False),
    sp.Torque: (dict(tau=V), (), (), False),
}


def construct(cls, two_bodies, first, second, **kwargs):
    if two_bodies:
        return cls("bad", first, second, **kwargs)
    return cls("bad", first, **kwargs)


@pytest.mark.parametrize("cls", list(CONSTRUCTORS), ids=lambda c: c.__name__)
def test_constructor_refuses_bad_input(cls):
    kwargs, vectors, axes, two = CONSTRUCTORS[cls]
    b0, b1 = HANDLES[0], HANDLES[1]
    construct(cls, two, b0, b1, **kwargs)  # the good arguments are accepted
    named = f"{cls.__name__} 'bad'"
    for label in vectors + axes:
        for value, problem in (((1.0, 2.0), "3-vector"), ((np.nan, 0.0, 1.0), "not finite")):
            with pytest.raises(ValueError, match=f"{named}: {label}.*{problem}"):
                construct(cls, two, b0, b1, **{**kwargs, label: value})
    for label in axes:
        with pytest.raises(ValueError, match=f"{named}: {label} has zero length"):
            construct(cls, two, b0, b1, **{**kwargs, label: (0.0, 0.0, 0.0)})
    with pytest.raises(ValueError, match=f"{named}: .*must be a body handle"):
        construct(cls, two, "b0", b1, **kwargs)
    if two:
        with pytest.raises(ValueError, match=f"{named}: joins body 'b0' to itself"):
            construct(cls, two, b0, b0, **kwargs)
    else:
        with pytest.raises(ValueError, match=f"{named}: cannot .* the ground"):
            construct(cls, two, HANDLES[G], None, **kwargs)
    drive_fields = [k for k in ("f", "tau") if k in kwargs]
    for label in drive_fields:
        wrong = 0.0 if np.shape(kwargs[label]) == (3,) else (0.0, 1.0, 2.0)
        with pytest.raises(ValueError, match=f"{named}: {label}.*shape"):
            construct(cls, two, b0, b1, **{**kwargs, label: wrong})


def test_spatial_elements_declare_dim_3():
    for cls in CONSTRUCTORS:
        assert cls.dim == 3


# ------------------------------------------------------------------------------------------------
# quaternion helpers
# ------------------------------------------------------------------------------------------------
def random_quaternion(rng):
    p = rng.normal(size=4)
    return p / np.linalg.norm(p) * rng.uniform(0.5, 2)


def test_rotation_matrix_is_the_oracles_and_scale_free():
    rng = np.random.default_rng(1)
    for _ in range(5):
        p = random_quaternion(rng)
        R = np.asarray(jax.jit(quaternion.rotation_matrix)(jnp.asarray(p)))
        np.testing.assert_allclose(R, hand.rot(p), atol=1e-14)
        np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-14)
        s = rng.normal(size=(3, 4))
        np.testing.assert_allclose(
            quaternion.rotate(jnp.asarray(p), jnp.asarray(s)), R @ s, atol=1e-14
        )


def test_rotate_custom_derivative_matches_plain_autodiff():
    """The custom JVP d(A s) = A ds + w_g x (A s) against jax's derivative of the written-out
    formula: first and second order, in p and in s, for one vector and a block."""
    rng = np.random.default_rng(2)
    p, s = jnp.asarray(random_quaternion(rng)), jnp.asarray(rng.normal(size=3))

    @jax.jit
    def derivatives(p, s, block):
        out = []
        for f in (quaternion.rotate, quaternion._rotate_values):  # custom, then plain autodiff
            out.append(
                (
                    jax.jacfwd(f, argnums=0)(p, s),
                    jax.jacfwd(f, argnums=1)(p, s),
                    jax.jacfwd(jax.jacrev(f))(p, s),
                    jax.jacfwd(f)(p, block),
                )
            )
        return out

    block = jnp.asarray(rng.normal(size=(3, 2)))
    custom, plain = derivatives(p, s, block)
    for got, want in zip(custom, plain):
        np.testing.assert_allclose(got, want, atol=1e-12)


def test_rates_and_T():
    """omega' from T(q) v is v's omega'; the global rate is A omega'; the spatial body kind's
    `qdot` is the oracle's T block and `body_rate` gives omega' back."""
    rng = np.random.default_rng(3)
    for _ in range(3):
        qb = jnp.asarray(random_q(rng, 1))
        v = rng.normal(size=6)
        qdot = SPATIAL.qdot(qb, jnp.asarray(v))
        np.testing.assert_allclose(qdot, hand.T_body(qb[3:]) @ v, atol=1e-14)
        np.testing.assert_allclose(quaternion.body_rate(qb[3:], qdot[3:]), v[3:], atol=1e-13)
        p, pdot = qb[3:], qdot[3:]
        np.testing.assert_allclose(
            quaternion.global_rate(p, pdot), hand.rot(np.asarray(p)) @ v[3:], atol=1e-13
        )
        np.testing.assert_allclose(quaternion.body_rate(p, p), 0.0, atol=1e-15)  # scale change


def test_exp_retract_and_from_matrix():
    """The body kind's quaternion exp, retraction and Shepperd's from_matrix against the
    oracle's."""
    rng = np.random.default_rng(4)
    exp, from_matrix = jax.jit(body_quaternion.exp), jax.jit(body_quaternion.from_matrix)

    def retract(p, theta):
        q = SPATIAL.retract(
            jnp.concatenate([jnp.zeros(3), p]), jnp.concatenate([jnp.zeros(3), theta])
        )
        return q[3:]

    for theta in [rng.normal(size=3), np.array([1e-9, -2e-9, 0.5e-9]), np.zeros(3)]:
        e = np.asarray(exp(jnp.asarray(theta)))
        np.testing.assert_allclose(e, hand.qexp(theta), atol=1e-15)
        p = random_quaternion(rng)
        np.testing.assert_allclose(
            retract(jnp.asarray(p / np.linalg.norm(p)), jnp.asarray(theta)),
            hand.qmul(p / np.linalg.norm(p), hand.qexp(theta)),
            atol=1e-15,
        )
    d_exp = jax.jacfwd(body_quaternion.exp)(jnp.zeros(3))
    np.testing.assert_allclose(d_exp, np.vstack([np.zeros(3), 0.5 * np.eye(3)]), atol=1e-15)
    half_turns = [hand.rot(hand.qexp(np.pi * hand.unit(rng.normal(size=3)))) for _ in range(3)]
    for R in half_turns + [hand.rot(random_quaternion(rng)) for _ in range(5)] + [np.eye(3)]:
        p = np.asarray(from_matrix(jnp.asarray(R)))
        assert p[0] >= 0 and abs(np.linalg.norm(p) - 1) < 1e-14
        np.testing.assert_allclose(hand.rot(p), R, atol=1e-14)
    p = random_quaternion(rng)
    assert float(quaternion.angle_between(jnp.asarray(p), jnp.asarray(-2 * p))) < 1e-7


def test_axis_frame_is_right_handed_and_orthonormal():
    rng = np.random.default_rng(6)
    axes = [rng.normal(size=3) for _ in range(5)] + [
        np.array(a, float) for a in (H, (0, 0, -1), (1, 0, 0), (0, 1e-12, -1))
    ]
    for axis in axes:
        f, g, h = (np.asarray(x) for x in sp.vectors.axis_frame(jnp.asarray(axis)))
        F = np.stack([f, g, h], axis=1)
        np.testing.assert_allclose(F.T @ F, np.eye(3), atol=1e-15)
        assert np.linalg.det(F) > 0
        np.testing.assert_allclose(h, hand.unit(axis), atol=1e-15)


# ------------------------------------------------------------------------------------------------
# derivatives with respect to the elements' parameters (reverse mode)
# ------------------------------------------------------------------------------------------------
@eqx.filter_jit
def _parameter_jacobian(element, q, t):
    """d Phi / d(parameters), reverse mode, over the element's flattened float arrays."""
    params, static = eqx.partition(element, eqx.is_inexact_array)
    flat, unflatten = jax.flatten_util.ravel_pytree(params)

    def residual(x):
        return eqx.combine(unflatten(x), static).residual(q, t)

    return flat, jax.jacrev(residual)(flat)


@pytest.mark.parametrize("kind", ["Revolute", "Prismatic", "Universal", "RevoluteDriver"])
def test_parameter_gradient_matches_central_difference(kind):
    """Reverse-mode derivatives through the custom JVP of `rotate`, the axis frames and the
    bound reference, against central differences (step 1e-6, error O(h^2) ~ 1e-11)."""
    draw = draw_of(kind, 0, 1)
    q, _, _, t = draw.states[0]
    flat, J = (np.asarray(x) for x in _parameter_jacobian(draw.element, jnp.asarray(q), t))
    params, static = eqx.partition(draw.element, eqx.is_inexact_array)
    _, unflatten = jax.flatten_util.ravel_pytree(params)

    def residual(x):
        element = eqx.combine(unflatten(jnp.asarray(x)), static)
        return np.asarray(pair_terms(element, q, np.zeros_like(q), np.zeros_like(q), t)[0])

    h = 1e-6
    for k in range(len(flat)):
        step = np.zeros_like(flat)
        step[k] = h
        fd = (residual(flat + step) - residual(flat - step)) / (2 * h)
        np.testing.assert_allclose(J[:, k], fd, rtol=1e-6, atol=1e-7)


def test_body_retraction_difference_and_log():
    """The body kind: retract(q, difference(q', q)) is q' (as a rotation), log inverts exp for
    |theta| < pi, and a retraction moves along T(q) v to first order (the oracle's T)."""
    rng = np.random.default_rng(7)
    retract = jax.jit(SPATIAL.retract)
    difference = jax.jit(lambda a, b: SPATIAL.difference(b, a))
    log = jax.jit(body_quaternion.log)
    for _ in range(4):
        qa, qb = (jnp.asarray(random_q(rng, 1)) for _ in range(2))
        back = np.asarray(retract(qa, difference(qa, qb)))
        np.testing.assert_allclose(back[:3], qb[:3], atol=1e-14)
        np.testing.assert_allclose(hand.rot(back[3:]), hand.rot(np.asarray(qb[3:])), atol=1e-13)
        theta = hand.unit(rng.normal(size=3)) * rng.uniform(0.0, 3.1)
        np.testing.assert_allclose(log(jnp.asarray(-1.7 * hand.qexp(theta))), theta, atol=1e-13)
        v = rng.normal(size=6)
        h = 1e-6
        fd = (np.asarray(retract(qa, h * v)) - np.asarray(retract(qa, -h * v))) / (2 * h)
        unit_q = np.concatenate([qa[:3], np.asarray(qa[3:]) / np.linalg.norm(qa[3:])])
        np.testing.assert_allclose(fd, hand.T_body(unit_q[3:]) @ v, atol=1e-8)
    np.testing.assert_allclose(log(jnp.asarray([2.0, 1e-9, 0.0, -3e-9])), [1e-9, 0.0, -3e-9])
    np.testing.assert_allclose(
        SPATIAL.normalize(jnp.asarray([1.0, 2, 3, 0, 0, 0, 2])), [1, 2, 3, 0, 0, 0, 1]
    )


# ------------------------------------------------------------------------------------------------
# redundancy facts of the spatial note (section 4), from the elements' rows
# ------------------------------------------------------------------------------------------------
def link(P, Q, hint=(0.0, 0.0, 1.0)):
    """(q, A, half length) of a link from P to Q: centre at the midpoint, body x-axis along
    PQ, body y-axis along hint x PQ (for a link in the plane z = 0: body z is global z)."""
    u = hand.unit(np.subtract(Q, P))
    v = hand.unit(np.cross(hint, u))
    R = np.stack([u, v, np.cross(u, v)], axis=1)
    p = np.asarray(body_quaternion.from_matrix(jnp.asarray(R)))
    centre = (np.asarray(P) + np.asarray(Q)) / 2
    return np.concatenate([centre, p]), R, np.linalg.norm(np.subtract(Q, P)) / 2


@eqx.filter_jit
def _mechanism_C(elements, q):
    def rows(q):
        return jnp.concatenate([e.residual(q, 0.0) for e in elements])

    return rows(q), jax.jacfwd(rows)(q)


def loop_rank(elements, q):
    phi, J = (np.asarray(x) for x in _mechanism_C(tuple(elements), jnp.asarray(q)))
    np.testing.assert_allclose(phi, 0.0, atol=1e-12)  # the loop is closed
    singular = np.linalg.svd(J @ hand.T(q), compute_uv=False)
    return len(phi), int(np.sum(singular > 1e-9 * singular[0]))


def four_bar():
    """Ground O2 = 0, O4 = (4, 0, 0); crank 1, coupler 3.5, rocker 2.5, in the plane z = 0."""
    O2, O4, phi = np.zeros(3), np.array([4.0, 0, 0]), 0.7
    A_ = np.array([np.cos(phi), np.sin(phi), 0.0])
    d = np.linalg.norm(O4 - A_)
    along = (3.5**2 - 2.5**2 + d**2) / (2 * d)
    e = (O4 - A_) / d
    B_ = A_ + along * e + np.sqrt(3.5**2 - along**2) * np.array([-e[1], e[0], 0.0])
    return [link(O2, A_), link(A_, B_), link(B_, O4)], (O2, A_, B_, O4)


def test_planar_four_bar_of_spatial_revolutes_is_redundant_three_times():
    """The note, section 4: four 3D revolutes, 20 rows, 18 velocity coordinates, rank 17
    (p = 3); closing one joint with a spherical instead: rank 17 of 18 rows (p = 1)."""
    links, points = four_bar()
    q = np.concatenate([x[0] for x in links])
    g, b = HANDLES[G], [Body(f"link{k}", k, 0) for k in range(3)]
    z = np.array([0.0, 0, 1])
    half = [x[2] for x in links]
    ends = [(np.array([-h, 0, 0]), np.array([h, 0, 0])) for h in half]
    hinges = [
        sp.Revolute("O2", g, b[0], points[0], ends[0][0], z, z),
        sp.Revolute("A", b[0], b[1], ends[0][1], ends[1][0], z, z),
        sp.Revolute("B", b[1], b[2], ends[1][1], ends[2][0], z, z),
        sp.Revolute("O4", b[2], g, ends[2][1], points[3], z, z),
    ]
    assert loop_rank(hinges, q) == (20, 17)
    ball = sp.Spherical("B", b[1], b[2], ends[1][1], ends[2][0])
    assert loop_rank([*hinges[:2], ball, hinges[3]], q) == (18, 17)


def test_rssr_linkage_has_no_redundancy():
    """The note, section 4: a spatial RSSR linkage: 16 rows of rank 16 (p = 0), 2 dof (the
    crank and the coupler's idle spin about its own axis)."""
    O2, O4 = np.zeros(3), np.array([0.5, 3.0, 1.5])
    A_ = np.array([np.cos(0.4), np.sin(0.4), 0.0])
    B_ = O4 + 1.2 * np.array([0.0, np.cos(2.0), np.sin(2.0)])
    (q_c, R_c, h_c), (q_k, _, h_k), (q_r, R_r, h_r) = link(O2, A_), link(A_, B_), link(O4, B_)
    q = np.concatenate([q_c, q_k, q_r])
    g, b = HANDLES[G], [Body(f"link{k}", k, 0) for k in range(3)]
    x, z = np.array([1.0, 0, 0]), np.array([0.0, 0, 1])
    elements = [
        sp.Revolute("crank", g, b[0], O2, [-h_c, 0, 0], z, R_c.T @ z),
        sp.Spherical("A", b[0], b[1], [h_c, 0, 0], [-h_k, 0, 0]),
        sp.Spherical("B", b[1], b[2], [h_k, 0, 0], [h_r, 0, 0]),
        sp.Revolute("rocker", g, b[2], O4, [-h_r, 0, 0], x, R_r.T @ x),
    ]
    assert loop_rank(elements, q) == (16, 16)
