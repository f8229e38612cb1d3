"""Seed 003 ("Two-dimensional inverse dynamics", lecture notes): the force and torque that each
constraint pair applies to each body, {Q_on i} = -[Phi_qi]^T lambda, written out by hand.

For every pair type a tiny model (two or three moving bodies plus an unconstrained bystander) is
put in a configuration that satisfies the pair exactly (constructed by hand, not assembled), a
random multiplier lambda is drawn, and the generalized force -C_X^T lambda_X of the pair (from
`model.C` and `model.rows`) is split per body into (F_x, F_y, T) with T about the centre of mass
(API.md). The reference is the seed's per-pair formula in numpy.

Seed 003 states the force at the joint point P and a torque T_seed = ((B s'^P)^T Phi_r^T -
Phi_phi^T) lambda, i.e. the couple left after moving the force to P; about the centre of mass
the torque is therefore T = (A s^P) x F + T_seed (2-D cross product a x b = a_x b_y - a_y b_x).
Residual conventions (jaxmb's residual in jaxmb/elements/ vs the seed):

- Revolute: jaxmb Phi = r_i^P - r_j^P (Haug's order; the seed uses r_j^P - r_i^P), so
  lambda_jaxmb = -lambda_seed: F_on_i = -lambda, F_on_j = +lambda, no couple;
- Distance (rev-rev), Parallel, PinInSlot, RelativeAngleDriver, Gear, GearOnLink: the same
  residual as the seed, formulas taken literally (Parallel's |a_i||a_j| and PinInSlot's
  |a_i||d_ij| presume a_j, resp. d_ij, point the same way as a_i, as in the constructed
  configurations);
- TranslationalDriver, Translational, Weld, AbsoluteDriver (not in seed 003): the forces are
  derived here by hand from the residual (virtual work), stated in each case.
"""

import numpy as np
import pytest
from oracle.planar import cross, perp, rot

import jaxmb as mb

TOL = 1e-12


def wrench(F, arm, couple=0.0):
    """(F_x, F_y, T about the centre of mass) of a force F at global offset `arm` from the
    centre of mass plus a pure couple."""
    return np.array([F[0], F[1], cross(arm, F) + couple])


class Scene:
    """Random poses for bodies b1, b2, b3 and a bystander b4 (never constrained)."""

    def __init__(self, rng):
        self.rng = rng
        self.q = {
            f"b{k}": np.array([*rng.uniform(-1, 1, 2), rng.uniform(-np.pi, np.pi)])
            for k in (1, 2, 3, 4)
        }

    def vec(self):
        return self.rng.uniform(-0.5, 0.5, 2)

    def r(self, b):
        return self.q[b][:2]

    def A(self, b):
        return rot(self.q[b][2])

    def place(self, b, s, target):
        """Move body b so that its point s lies at the global point target."""
        self.q[b][:2] = target - self.A(b) @ s

    def build(self, make_pair):
        m = mb.Mechanism()
        handles = {b: m.body(b, mass=1.0, inertia=0.1, q=self.q[b]) for b in self.q}
        handles["ground"] = m.ground
        m.add(make_pair(handles))
        model = m.build()
        q = np.concatenate([self.q[b] for b in model.body_names])
        return model, q


def case_revolute(sc):
    si, sj = sc.vec(), sc.vec()
    sc.place("b2", sj, sc.r("b1") + sc.A("b1") @ si)
    pair = lambda h: mb.Revolute("X", h["b1"], h["b2"], s_i=si, s_j=sj)  # noqa: E731

    def expected(lam):  # seed: F_on_i = lambda_seed = -lambda, F_on_j = +lambda, couples 0
        return {"b1": wrench(-lam, sc.A("b1") @ si), "b2": wrench(lam, sc.A("b2") @ sj)}

    return pair, expected, 2


def case_revolute_ground(sc):
    si, sj = sc.vec(), sc.vec()  # s_i: a global point of the ground
    sc.place("b1", sj, si)
    pair = lambda h: mb.Revolute("X", h["ground"], h["b1"], s_i=si, s_j=sj)  # noqa: E731

    def expected(lam):  # only body j moves: F_on_j = +lambda at P_j
        return {"b1": wrench(lam, sc.A("b1") @ sj)}

    return pair, expected, 2


def case_distance(sc):
    si, sj = sc.vec(), sc.vec()
    length = sc.rng.uniform(0.5, 1.5)
    alpha = sc.rng.uniform(-np.pi, np.pi)
    d = length * np.array([np.cos(alpha), np.sin(alpha)])
    sc.place("b2", sj, sc.r("b1") + sc.A("b1") @ si + d)
    pair = lambda h: mb.Distance("X", h["b1"], h["b2"], s_i=si, s_j=sj, length=length)  # noqa: E731

    def expected(lam):  # seed: F_on_i = 2 d_ij lambda at P_i, F_on_j = -2 d_ij lambda at P_j
        lam = lam[0]
        return {
            "b1": wrench(2 * d * lam, sc.A("b1") @ si),
            "b2": wrench(-2 * d * lam, sc.A("b2") @ sj),
        }

    return pair, expected, 1


def case_parallel(sc):
    ai, aj = sc.vec(), sc.vec()
    # a_j along +a_i: phi_j + atan2(a_j) = phi_i + atan2(a_i)
    sc.q["b2"][2] = sc.q["b1"][2] + np.arctan2(ai[1], ai[0]) - np.arctan2(aj[1], aj[0])
    pair = lambda h: mb.Parallel("X", h["b1"], h["b2"], a_i=ai, a_j=aj)  # noqa: E731

    def expected(lam):  # seed: no forces, T_on_i = |a_i||a_j| lambda, T_on_j = -|a_i||a_j| lambda
        t = np.linalg.norm(ai) * np.linalg.norm(aj) * lam[0]
        return {"b1": np.array([0.0, 0.0, t]), "b2": np.array([0.0, 0.0, -t])}

    return pair, expected, 1


def case_pin_in_slot(sc):
    si, sj, ai = sc.vec(), sc.vec(), sc.vec()
    dist = sc.rng.uniform(0.3, 1.0)
    ai_g = sc.A("b1") @ ai
    d = dist * ai_g / np.linalg.norm(ai_g)  # d_ij along +a_i
    sc.place("b2", sj, sc.r("b1") + sc.A("b1") @ si + d)
    pair = lambda h: mb.PinInSlot("X", h["b1"], h["b2"], s_i=si, s_j=sj, a_i=ai)  # noqa: E731

    def expected(lam):
        # seed: F_on_i = [R] a_i lambda, couple |a_i||d_ij| lambda (about P_i);
        #       F_on_j = -[R] a_i lambda at P_j, no couple
        lam = lam[0]
        F = perp(ai_g) * lam
        return {
            "b1": wrench(F, sc.A("b1") @ si, np.linalg.norm(ai) * dist * lam),
            "b2": wrench(-F, sc.A("b2") @ sj),
        }

    return pair, expected, 1


def case_relative_angle_driver(sc):
    value, offset = sc.rng.uniform(-1, 1, 2)
    sc.q["b2"][2] = sc.q["b1"][2] + offset + value
    pair = lambda h: mb.RelativeAngleDriver(
        "X",
        h["b1"],
        h["b2"],
        f=mb.drive.Constant(value),  # noqa: E731
        offset=offset,
    )

    def expected(lam):  # seed: T_on_i = lambda, T_on_j = -lambda
        return {"b1": np.array([0.0, 0.0, lam[0]]), "b2": np.array([0.0, 0.0, -lam[0]])}

    return pair, expected, 1


def case_gear(sc):
    K, C = -sc.rng.uniform(0.3, 3.0), sc.rng.uniform(-1, 1)  # external gears: K < 0
    sc.q["b2"][2] = K * sc.q["b1"][2] + C
    pair = lambda h: mb.Gear("X", h["b1"], h["b2"], ratio=K, offset=C)  # noqa: E731

    def expected(lam):  # seed: T_on_i = K lambda, T_on_j = -lambda
        return {"b1": np.array([0.0, 0.0, K * lam[0]]), "b2": np.array([0.0, 0.0, -lam[0]])}

    return pair, expected, 1


def case_gear_on_link(sc):
    K, C = sc.rng.uniform(0.3, 3.0), sc.rng.uniform(-1, 1)  # internal gears: K > 0
    pk = sc.q["b3"][2]
    sc.q["b2"][2] = pk + K * (sc.q["b1"][2] - pk) + C
    pair = lambda h: mb.GearOnLink("X", h["b1"], h["b2"], h["b3"], ratio=K, offset=C)  # noqa: E731

    def expected(lam):  # seed: T_on_i = K lambda, T_on_j = -lambda, T_on_k = (1 - K) lambda
        lam = lam[0]
        return {
            "b1": np.array([0.0, 0.0, K * lam]),
            "b2": np.array([0.0, 0.0, -lam]),
            "b3": np.array([0.0, 0.0, (1 - K) * lam]),
        }

    return pair, expected, 1


def case_translational_driver(sc):
    """Phi = (r_j^P - r_i^P)^T u_g - d with u_g = A_j u/|u|. By hand: dPhi/dr_i = -u_g^T,
    dPhi/dr_j = u_g^T, dPhi/dphi_i = -(A_i s_i) x u_g, dPhi/dphi_j = (A_j s_j) x u_g + u_g x d.
    So F_on_i = lambda u_g at P_i; F_on_j = -lambda u_g acting on the line through P_i
    (arm A_j s_j - d_ij from j's centre of mass: u_g turns with body j)."""
    si, sj, u = sc.vec(), sc.vec(), sc.vec()
    value, beta = sc.rng.uniform(-1, 1, 2)
    ug = sc.A("b2") @ u / np.linalg.norm(u)
    d = value * ug + beta * perp(ug)  # any offset across u is allowed
    sc.place("b1", si, sc.r("b2") + sc.A("b2") @ sj - d)
    pair = lambda h: mb.TranslationalDriver(
        "X",
        h["b1"],
        h["b2"],
        s_i=si,
        s_j=sj,
        u=u,  # noqa: E731
        d=mb.drive.Constant(value),
    )

    def expected(lam):
        lam = lam[0]
        return {
            "b1": wrench(lam * ug, sc.A("b1") @ si),
            "b2": wrench(-lam * ug, sc.A("b2") @ sj - d),
        }

    return pair, expected, 1


def case_translational(sc):
    """Rows [(r_j^P - r_i^P)^T v_g; phi_i - phi_j - angle], v_g = A_j v/|v|: the first row as
    the translational driver (force lambda_1 v_g on i at P_i, -lambda_1 v_g on j through P_i),
    the second a couple -lambda_2 on i and +lambda_2 on j."""
    si, sj, v = sc.vec(), sc.vec(), sc.vec()
    angle, beta = sc.rng.uniform(-1, 1, 2)
    sc.q["b1"][2] = sc.q["b2"][2] + angle
    vg = sc.A("b2") @ v / np.linalg.norm(v)
    d = beta * perp(vg)  # along the sliding axis
    sc.place("b1", si, sc.r("b2") + sc.A("b2") @ sj - d)
    pair = lambda h: mb.Translational("X", h["b1"], h["b2"], s_i=si, s_j=sj, v=v, angle=angle)  # noqa: E731

    def expected(lam):
        return {
            "b1": wrench(lam[0] * vg, sc.A("b1") @ si, -lam[1]),
            "b2": wrench(-lam[0] * vg, sc.A("b2") @ sj - d, lam[1]),
        }

    return pair, expected, 2


def case_weld(sc):
    """Rows [r_i^P - r_j^P; phi_j - phi_i - angle]: the revolute's forces (F_on_i = -lambda_12
    at P_i, +lambda_12 on j at P_j) plus a couple +lambda_3 on i and -lambda_3 on j."""
    si, sj = sc.vec(), sc.vec()
    angle = sc.rng.uniform(-1, 1)
    sc.q["b2"][2] = sc.q["b1"][2] + angle
    sc.place("b2", sj, sc.r("b1") + sc.A("b1") @ si)
    pair = lambda h: mb.Weld("X", h["b1"], h["b2"], s_i=si, s_j=sj, angle=angle)  # noqa: E731

    def expected(lam):
        return {
            "b1": wrench(-lam[:2], sc.A("b1") @ si, lam[2]),
            "b2": wrench(lam[:2], sc.A("b2") @ sj, -lam[2]),
        }

    return pair, expected, 3


def case_absolute_driver(sc):
    """Phi = q_c - f(t) for coordinate c of body b2: the generalized force -lambda e_c."""
    sc.q["b2"][1] = 0.25

    def pair(h):
        return mb.AbsoluteDriver("X", h["b2"], 1, mb.drive.Constant(0.25))

    def expected(lam):
        return {"b2": np.array([0.0, -lam[0], 0.0])}

    return pair, expected, 1


CASES = {name[len("case_") :]: fn for name, fn in globals().items() if name.startswith("case_")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_pair_force_and_torque_on_each_body(case, rng):
    """Reference: seed 003's "Lagrange multipliers for specific constraints" (revolute, double
    revolute, parallel, pin-in-slot, relative angle driver, gear, gear on link) and hand
    derivations from the residuals for the others (see each case's docstring), at a random
    configuration satisfying the pair and a random lambda, to 1e-12."""
    sc = Scene(rng)
    make_pair, expected, rows = CASES[case](sc)
    model, q = sc.build(make_pair)
    assert np.max(np.abs(np.asarray(model.phi(q, 0.0)))) < 1e-12, "configuration not consistent"
    sl = model.rows("X")
    assert sl.stop - sl.start == rows
    lam = rng.normal(size=rows)
    C = np.asarray(model.C(q, 0.0))
    gen = -C[sl].T @ lam  # the generalized force pair X applies (API.md)
    want = expected(lam)
    for k, body in enumerate(model.body_names):
        got = gen[3 * k : 3 * k + 3]
        ref = want.get(body, np.zeros(3))
        np.testing.assert_allclose(got, ref, rtol=0, atol=TOL, err_msg=f"{case}: on {body}")
    # virtual work: a pair's reaction does no work on motions it allows (seed 003, "Virtual
    # work"): for velocities with C_X qd = 0 the power gen^T qd vanishes
    _, s, vt = np.linalg.svd(C[sl])
    for qd in vt[rows:][:3]:
        assert abs(gen @ qd) < 1e-12


# ---------------------------------------------------------------------------------------------
# Statics (seed 003, "Statics": qdd = 0, Phi_q^T lambda = Q_applied)


def beam_model(L=2.0, h=1.2, m=3.0, a=1.5, P=40.0, g=9.81, with_cable=True):
    m_ = mb.Mechanism()
    beam = m_.body("beam", mass=m, inertia=m * L**2 / 12, q=(L / 2, 0.0, 0.0))
    m_.add(mb.Revolute("pin", m_.ground, beam, s_i=(0.0, 0.0), s_j=(-L / 2, 0.0)))
    if with_cable:
        m_.add(
            mb.Distance(
                "cable", beam, m_.ground, s_i=(L / 2, 0.0), s_j=(0.0, h), length=np.hypot(L, h)
            )
        )
    m_.add(mb.Force("load", beam, s=(a - L / 2, 0.0), f=(0.0, -P)))
    m_.add(mb.Gravity((0.0, -g)))
    return m_.build()


def test_statics_cantilever_beam_with_cable():
    """A horizontal beam (length L, mass m) pinned to the wall at O = (0, 0), its tip (L, 0)
    tied by a cable to the wall point (0, h), a load P down at x = a. Reference, by hand
    (moments about O, then force balance): cable tension T = (m g L/2 + P a) l / (L h) with
    l = sqrt(L^2 + h^2), acting on the beam along e = (-L, h)/l; pin force on the beam
    R = (T L/l, m g + P - T h/l). jaxmb's rev-rev multiplier is T/(2 l) (seed 003: F_on_i =
    2 d_ij lambda with d_ij = l e) and the revolute's (ground -> beam) is R (F_on_j = +lambda)."""
    L, h, m, a, P, g = 2.0, 1.2, 3.0, 1.5, 40.0, 9.81
    model = beam_model(L, h, m, a, P, g)
    q = np.array([L / 2, 0.0, 0.0])
    rx = mb.statics(model, q)
    ell = np.hypot(L, h)
    T = (m * g * L / 2 + P * a) * ell / (L * h)
    e = np.array([-L, h]) / ell
    R = np.array([T * L / ell, m * g + P - T * h / ell])
    lam = np.asarray(rx.lam)
    np.testing.assert_allclose(lam[model.rows("cable")], [T / (2 * ell)], rtol=1e-12)
    np.testing.assert_allclose(lam[model.rows("pin")], R, rtol=1e-12)
    fx, fy, tq = (float(v) for v in rx.on_body("cable", "beam"))
    np.testing.assert_allclose([fx, fy, tq], [*(T * e), cross((L / 2, 0.0), T * e)], rtol=1e-12)
    fx, fy, tq = (float(v) for v in rx.on_body("pin", "beam"))
    np.testing.assert_allclose([fx, fy, tq], [*R, cross((-L / 2, 0.0), R)], rtol=1e-12, atol=1e-12)
    assert T > 0 and R[0] > 0  # the cable pulls, the wall pushes the beam out


def test_statics_rejects_a_non_equilibrium():
    """Without the cable the beam is a pendulum at rest, not in equilibrium: statics raises
    (seed 003's statics presumes Phi_q^T lambda = Q is solvable)."""
    model = beam_model(with_cable=False)
    with pytest.raises(Exception, match="not balanced"):
        mb.statics(model, np.array([1.0, 0.0, 0.0]))
