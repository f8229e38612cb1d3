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
import jax.numpy as jnp
import numpy as np
import pytest
from oracle import spatial as hand

from jaxmb import drive
from jaxmb._runtime.exceptions import JaxmbError
from jaxmb.elements import spatial as sp
from jaxmb.elements.geometry import Body
from jaxmb.elements.spatial import geometry, orientation, quaternion

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
