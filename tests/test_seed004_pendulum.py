"""Seed 004 (Stroe & Staicu), section 5: inverse dynamics of the composed pendulum.

Conventions. The paper's fixed frame has x pointing DOWN (along gravity; its force function is
U = m g u1^T r, eq. 5.5) and y to the right, angles counter-clockwise from the downward
vertical; jaxmb's global frame has X right and Y up, so paper (x, y) = (-Y, X) and
phi_body = -pi/2 + angle. The quantities compared:

- M1: the torque motor M1 (ground -> rod 1) applies to rod 1 = `on_body("M1", "rod1")` torque
  (= -lambda_M1, since Phi_M1 = phi_rod1 - ... has +1 in rod 1's angle column);
- M2: the torque motor M2 (rod 1 -> rod 2) applies to rod 2 = `on_body("M2", "rod2")` torque
  (rod 1 receives -M2). These are the Lagrange generalized forces Q1 = M1, Q2 = M2 of (5.4):
  the virtual work M1 dphi1 + M2 (dphi2 - dphi1) = M1 dphi10 + M2 dphi21;
- f10x: the paper-x (vertical, downward) component of the force that joint O1 applies to
  rod 1 = -Y component of `on_body("O1", "rod1")` (eq. 5.8 and R_{h+1} of eq. 4.2: the
  generalized force along the fictitious coordinate x of the support); f10y (horizontal) is
  the X component. The paper's text calls x both "vertical" (section 5.1) and, in Fig. 5's
  caption, "horizontal"; (5.8) contains -(m1 + m2) g, so it is the vertical component.

References (independent of jaxmb): the closed forms (5.7) and (5.8) transcribed below in numpy
(they were re-derived by hand by Lagrange's equations and agree with the extracted text), and a
Newton-Euler recursion written out here (rod 2, then rod 1), which also supplies the force
components the paper does not print.
"""

import importlib.util
import os

import jax
import numpy as np
import pytest

import jaxmb as mb
from jaxmb.models import composed_pendulum as cp

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
L1, L2, M1, M2, G = 0.50, 0.75, 0.25, 1.0, 9.81  # seed 004, section 5.2
A10, A21, W = np.pi / 12, np.pi / 6, np.pi / 6  # (5.11)
TS = np.linspace(0.0, 6.0, 601)
TOL = 1e-9


def drive_laws(t):
    """(5.11) and its derivatives: phi = A (1 - cos(w t)), phid = A w sin, phidd = A w^2 cos."""
    c, s = np.cos(W * t), np.sin(W * t)
    return (
        (A10 * (1 - c), A10 * W * s, A10 * W**2 * c),
        (A21 * (1 - c), A21 * W * s, A21 * W**2 * c),
    )


def paper_closed_forms(t):
    """Eqs. (5.7) and (5.8) of seed 004 as printed, symbol by symbol."""
    (p10, d10, a10), (p21, d21, a21) = drive_laws(t)
    m1, m2, l1, l2, g = M1, M2, L1, L2, G
    Mot1 = (
        (m1 / 3 + m2) * l1**2 * a10
        + m2 * l2**2 / 3 * (a10 + a21)
        + 0.5 * m2 * l1 * l2 * (2 * a10 + a21) * np.cos(p21)
        - 0.5 * m2 * l1 * l2 * d21 * (2 * d10 + d21) * np.sin(p21)
        + 0.5 * (m1 + 2 * m2) * g * l1 * np.sin(p10)
        + 0.5 * m2 * g * l2 * np.sin(p10 + p21)
    )
    Mot2 = (
        m2 * l2**2 / 3 * (a10 + a21)
        + 0.5 * m2 * l1 * l2 * (a10 * np.cos(p21) + d10**2 * np.sin(p21))
        + 0.5 * m2 * g * l2 * np.sin(p10 + p21)
    )
    f10x = (
        -(m1 + m2) * g
        - 0.5 * (m1 + 2 * m2) * l1 * (a10 * np.sin(p10) + d10**2 * np.cos(p10))
        - 0.5 * m2 * l2 * ((a10 + a21) * np.sin(p10 + p21) + (d10 + d21) ** 2 * np.cos(p10 + p21))
    )
    return Mot1, Mot2, f10x


def newton_euler(t):
    """Independent Newton-Euler solution in jaxmb's global frame (X right, Y up).

    Rod k points along e_k = (sin phi_k, -cos phi_k) from its proximal joint (phi_1 = phi10,
    phi_2 = phi10 + phi21); c1 = l1/2 e1, O2 = l1 e1, c2 = O2 + l2/2 e2, J_k = m_k l_k^2 / 12,
    e'' = phidd (cos, sin) + phid^2 (-sin, cos). With F21 the force of O2 on rod 2 and F10
    that of O1 on rod 1 (2-D cross product a x b = a_X b_Y - a_Y b_X):
        rod 2: F21 = m2 (a_c2 - g),           J2 phidd2 = M2 + (-(l2/2) e2) x F21,
        rod 1: F10 = m1 (a_c1 - g) + F21,     J1 phidd1 = M1 - M2 + (-(l1/2) e1) x F10
                                                           + ((l1/2) e1) x (-F21).
    Returns M1, M2, F10 (2, T), F21 (2, T).
    """
    (p10, d10, a10), (p21, d21, a21) = drive_laws(t)
    p1, d1, a1 = p10, d10, a10
    p2, d2, a2 = p10 + p21, d10 + d21, a10 + a21
    gv = np.array([0.0, -G])[:, None]

    def e(p):
        return np.array([np.sin(p), -np.cos(p)])

    def edd(p, d, a):
        return a * np.array([np.cos(p), np.sin(p)]) + d**2 * np.array([-np.sin(p), np.cos(p)])

    def cross(u, v):
        return u[0] * v[1] - u[1] * v[0]

    acc1 = 0.5 * L1 * edd(p1, d1, a1)
    acc2 = L1 * edd(p1, d1, a1) + 0.5 * L2 * edd(p2, d2, a2)
    J1, J2 = M1 * L1**2 / 12, M2 * L2**2 / 12
    F21 = M2 * (acc2 - gv)
    Mot2 = J2 * a2 + cross(0.5 * L2 * e(p2), F21)
    F10 = M1 * (acc1 - gv) + F21
    Mot1 = J1 * a1 + Mot2 + cross(0.5 * L1 * e(p1), F10) + cross(0.5 * L1 * e(p1), F21)
    return Mot1, Mot2, F10, F21


def close(actual, expected, tol=TOL):
    """Absolute error within tol times max(1, max |expected|)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    scale = max(1.0, float(np.max(np.abs(expected))))
    err = float(np.max(np.abs(actual - expected)))
    assert err <= tol * scale, f"max error {err:.3e} > {tol:.0e} * {scale:.3g}"
    return err


@pytest.fixture(scope="module")
def solve():
    return jax.jit(lambda m: mb.inverse_dynamics(m, TS))


@pytest.fixture(scope="module")
def original(solve):
    model = cp.build()
    traj, rx = solve(model)
    return model, traj, rx


@pytest.fixture(scope="module")
def fictitious():
    """Both variants of seed 004's fictitious mobility: O1 freed along the paper's x (down, as
    in the paper) and along the horizontal. The model is built inside the jitted function from
    the traced direction (building is traceable), so both variants share one compilation."""
    solve_u = jax.jit(lambda u: mb.inverse_dynamics(cp.build_fictitious(direction=u), TS))
    out = {}
    for key, u in (("vertical", (0.0, -1.0)), ("horizontal", (1.0, 0.0))):
        out[key] = (cp.build_fictitious(direction=u), *solve_u(np.array(u)))
    return out


def test_reference_transcription_agrees_with_newton_euler():
    """The transcribed (5.7), (5.8) equal the independent Newton-Euler recursion (numpy only):
    checks the extracted formulas (and the sign of f10x = -F10_Y) before jaxmb is compared."""
    Mot1, Mot2, f10x = paper_closed_forms(TS)
    ne1, ne2, F10, _ = newton_euler(TS)
    close(Mot1, ne1, 1e-12)
    close(Mot2, ne2, 1e-12)
    close(f10x, -F10[1], 1e-12)
    # the helper in the model module (used by the example) gives the same numbers
    ref = cp.closed_form(TS)
    close(ref["M1"], Mot1, 1e-12)
    close(ref["M2"], Mot2, 1e-12)
    close(ref["f10x"], f10x, 1e-12)
    close(ref["f10y"], F10[0], 1e-12)


def test_kinematics_follow_drive_laws(original):
    """Reference: the drive laws (5.11); the pivots O1 = origin and O2 = rod 1's tip."""
    model, traj, rx = original
    q = np.asarray(traj.q)
    (p10, d10, _), (p21, d21, _) = drive_laws(TS)
    close(q[:, 2] + np.pi / 2, p10)
    close(q[:, 5] - q[:, 2], p21)
    qd = np.asarray(traj.qd)
    close(qd[:, 2], d10)
    close(qd[:, 5] - qd[:, 2], d21)
    e1 = np.stack([np.sin(p10), -np.cos(p10)], axis=1)
    close(q[:, 0:2], 0.5 * L1 * e1)
    assert q.shape == (601, 6) and model.pair_names == ("O1", "O2", "M1", "M2")
    assert all(bool(np.all(np.asarray(v))) for v in rx.solvable.values())


def test_driving_torques_match_closed_form_5_7(original):
    """Reference: (5.7), M1 and M2 (and the Newton-Euler recursion), at 601 instants, 1e-9."""
    _, _, rx = original
    Mot1, Mot2, _ = paper_closed_forms(TS)
    close(rx.on_body("M1", "rod1")[2], Mot1)
    close(rx.on_body("M2", "rod2")[2], Mot2)
    # the reactions of the motors on the other bodies: rod 1 receives -M2, no forces
    close(rx.on_body("M2", "rod1")[2], -Mot2)
    for pair, body in (("M1", "rod1"), ("M2", "rod1"), ("M2", "rod2")):
        fx, fy, _ = rx.on_body(pair, body)
        close(fx, 0.0 * TS)
        close(fy, 0.0 * TS)
    # sanity: the torques are not trivially small
    assert np.max(np.abs(Mot1)) > 6.0 and np.max(np.abs(Mot2)) > 3.0


def test_support_force_matches_closed_form_5_8(original):
    """Reference: (5.8) for f10x (paper x = down, force of O1 on rod 1), 1e-9 relative to its
    maximum; Newton-Euler for the horizontal component f10y and for the force of O2 on rod 2
    (Fig. 6) and rod 1 (equal and opposite)."""
    _, _, rx = original
    _, _, f10x = paper_closed_forms(TS)
    _, _, F10, F21 = newton_euler(TS)
    fx, fy, _ = rx.on_body("O1", "rod1")
    close(-np.asarray(fy), f10x)
    close(fx, F10[0])
    fx2, fy2, _ = rx.on_body("O2", "rod2")
    close(fx2, F21[0])
    close(fy2, F21[1])
    fx21, fy21, _ = rx.on_body("O2", "rod1")
    close(fx21, -F21[0])
    close(fy21, -F21[1])
    # torque of O1 about rod 1's centre: the moment of F10 applied at O1 = c1 - (l1/2) e1
    (p10, _, _), _ = drive_laws(TS)
    arm = -0.5 * L1 * np.array([np.sin(p10), -np.cos(p10)])
    close(rx.on_body("O1", "rod1")[2], arm[0] * F10[1] - arm[1] * F10[0])
    # O1 holds the pendulum up: f10x (down) is about -(m1 + m2) g = -12.26 N
    assert np.max(-np.asarray(fy)) < -12.1


@pytest.mark.parametrize("variant", ["vertical", "horizontal"])
def test_fictitious_mobility_equals_joint_reaction(original, fictitious, variant):
    """Seed 004, section 4 (eq. 4.2): free the support O1 along u and hold it there with a
    driver; the driver's multiplier is the joint force component along u.

    Reference: the original model's O1 reaction (and (5.8) / Newton-Euler). Sign and mass
    correction (see `build_fictitious`): lambda_X = u^T f_O1->rod1 - m_support g^T u, with
    g^T u = 9.81 for u = down, 0 for the horizontal. The motion and the motor torques are those
    of the original model, and the support does not move."""
    _, traj0, rx0 = original
    model, traj, rx = fictitious[variant]
    u = np.array((0.0, -1.0) if variant == "vertical" else (1.0, 0.0))
    lam = np.asarray(rx.lam)[:, model.rows("X")][:, 0]
    weight_along_u = float(model.masses[0]) * np.dot(np.array([0.0, -G]), u)
    f0 = np.stack([np.asarray(a) for a in rx0.on_body("O1", "rod1")[:2]], axis=1)
    close(lam, f0 @ u - weight_along_u)
    _, _, f10x = paper_closed_forms(TS)
    _, _, F10, _ = newton_euler(TS)
    close(lam + weight_along_u, f10x if variant == "vertical" else F10[0])
    # the force X applies to the support is lambda u (its generalized force -C_X^T lambda_X)
    fx, fy, tq = rx.on_body("X", "support")
    close(np.stack([fx, fy], axis=1), lam[:, None] * u[None, :])
    close(np.asarray(traj.q)[:, :3], 0.0 * np.asarray(traj.q)[:, :3])
    close(np.asarray(traj.q)[:, 3:], np.asarray(traj0.q))
    close(rx.on_body("M1", "rod1")[2], rx0.on_body("M1", "rod1")[2])
    close(rx.on_body("M2", "rod2")[2], rx0.on_body("M2", "rod2")[2])


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    path = os.path.join(ROOT, "examples", "composed_pendulum.py")
    spec = importlib.util.spec_from_file_location("composed_pendulum_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = tmp_path_factory.mktemp("pendulum")
    return module.main(["--quick", "--out", str(out)]), out


def test_example_quick_writes_figures(example):
    """examples/composed_pendulum.py --quick: the figures like the paper's Figs. 3-6 exist and
    the printed deviations from the closed forms (5.7), (5.8) are at round-off (1e-9)."""
    result, out = example
    for name in (
        "pendulum_angles.png",
        "pendulum_M1.png",
        "pendulum_M2.png",
        "pendulum_f10.png",
        "pendulum_f21.png",
    ):
        assert (out / name).stat().st_size > 10_000, name
    assert len(result["ts"]) == 61
    Mot1, Mot2, f10x = paper_closed_forms(result["ts"])
    close(result["computed"]["M1"], Mot1)
    close(result["computed"]["M2"], Mot2)
    close(result["computed"]["f10x"], f10x)
    close(result["computed"]["f10x_fictitious"], f10x)
