"""Position, velocity and driven kinematic analysis: `assemble`, `consistent_velocity`,
`kinematics`.

Independent references used below:
- the definition of `assemble` as a nearest-point projection: the result satisfies Phi = 0 and
  the KKT condition (q* - q_init is orthogonal to the null space of Phi_q(q*), computed with
  numpy's SVD), and its derivative with respect to q_init at an assembled point is the
  orthogonal projector onto that null space (numpy);
- the four-bar loop-closure equations a e^{i theta} + b e^{i phi3} - c e^{i phi4} - d = 0,
  written here and solved with scipy.optimize.fsolve (and the builder's closed form);
- central finite differences for the implicit derivative of `assemble`;
- numpy's least-squares (minimum-norm) solution for the projection of `consistent_velocity`;
- the slider-crank closed form x_B = r cos(theta) + sqrt(l^2 - r^2 sin^2(theta)), its rod
  angle beta = -asin(r sin(theta) / l) and their first and second time derivatives, derived
  by hand below (and checked against numpy finite differences of the closed form).
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize
from oracle.linalg import null_space

import jaxmb as mb
from jaxmb.models import four_bar, mobile_robot, slider_crank

MODELS = {
    "mobile_robot": lambda: mobile_robot.build(),
    "four_bar": lambda: four_bar.build(),
    "slider_crank": lambda: slider_crank.build(),
}


def _terms(model, q, qd, t):
    """q* = assemble(model, q, t), Phi(q*, t), Phi_q(q*, t), qd* = consistent_velocity(model,
    q*, qd, t), C(q*, t) and b(q*, t): one compiled function per model layout, shared by the
    tests below."""
    q_star = mb.assemble(model, q, t)
    C = model.C(q_star, t)
    return (
        q_star,
        model.phi(q_star, t),
        C[model.holonomic_rows],
        mb.consistent_velocity(model, q_star, qd, t),
        C,
        model.b(q_star, t),
    )


_terms_jit = jax.jit(_terms)


def _assemble_jit(model, q, t):
    """(q*, Phi(q*), Phi_q(q*)) through the shared compiled function."""
    return _terms_jit(model, q, jnp.zeros_like(model.q0), t)[:3]


@functools.cache
def _assembled_case(name):
    """Per model: the perturbed start (q0 + 1e-2 N(0, 1), seeded), the assembled q*, Phi(q*)
    and Phi_q(q*), and q* assembled again (computed once per module run)."""
    model = MODELS[name]()
    rng = np.random.default_rng(7)
    q_init = model.q0 + 1e-2 * rng.standard_normal(model.n)
    q_star, r, J = (np.asarray(x) for x in _assemble_jit(model, q_init, 0.0))
    again = np.asarray(_assemble_jit(model, jnp.asarray(q_star), 0.0)[0])
    return dict(
        name=name, model=model, q_init=np.asarray(q_init), q=q_star, phi=r, J=J, again=again
    )


@pytest.fixture(scope="module", params=list(MODELS))
def assembled(request):
    return _assembled_case(request.param)


# ------------------------------------------------------------------------------------------
# 2. assemble
# ------------------------------------------------------------------------------------------
def test_assemble_converges_from_perturbed_start(assembled):
    """From q0 + 1e-2 noise, |Phi(q*)| < 1e-12 (robot with redundant rows, four-bar,
    slider-crank), and q* moved (the start was off the constraint manifold)."""
    assert np.max(np.abs(assembled["phi"])) < 1e-12
    assert np.max(np.abs(assembled["q"] - assembled["q_init"])) > 1e-4


def test_assemble_is_nearest_point(assembled):
    """KKT of min |q - q_init|^2 s.t. Phi = 0: q* - q_init is orthogonal to null(Phi_q(q*))
    (numpy SVD basis), to 1e-12."""
    N = null_space(assembled["J"], 1e-10)
    assert N.shape[1] >= 1
    disp = assembled["q"] - assembled["q_init"]
    assert np.max(np.abs(N.T @ disp)) < 1e-12 * max(1.0, np.linalg.norm(disp))


def test_assemble_is_idempotent(assembled):
    """Assembling an assembled configuration returns it (1e-12)."""
    np.testing.assert_allclose(assembled["again"], assembled["q"], rtol=0, atol=1e-12)


def _loop_closure_fsolve(theta, a, b, c, d, guess):
    """Independent four-bar position solution: scipy fsolve on the loop equations for
    (phi3, phi4), then the centroids of the slender links."""

    def loop(x):
        p3, p4 = x
        return [
            a * np.cos(theta) + b * np.cos(p3) - c * np.cos(p4) - d,
            a * np.sin(theta) + b * np.sin(p3) - c * np.sin(p4),
        ]

    p3, p4 = scipy.optimize.fsolve(loop, guess, xtol=1e-13)
    assert np.max(np.abs(loop([p3, p4]))) < 1e-14
    A = a * np.array([np.cos(theta), np.sin(theta)])
    crank = [A[0] / 2, A[1] / 2, theta]
    coupler = [*(A + b / 2 * np.array([np.cos(p3), np.sin(p3)])), p3]
    rocker = [*(np.array([d, 0.0]) + c / 2 * np.array([np.cos(p4), np.sin(p4)])), p4]
    return np.array(crank + coupler + rocker)


def test_assembled_four_bar_matches_loop_closure():
    """The four-bar assembled from the perturbed start (fixture) is a closed linkage: with its
    crank angle theta = q*[2], the coordinates equal the scipy fsolve solution of the
    loop-closure equations (1e-10) and the builder's closed form `four_bar.configuration`
    (open branch)."""
    assembled = _assembled_case("four_bar")
    a, b, c, d = 0.1, 0.35, 0.3, 0.35  # four_bar.build defaults
    q = assembled["q"]
    theta = q[2]
    ref = _loop_closure_fsolve(theta, a, b, c, d, guess=assembled["q_init"][[5, 8]])
    np.testing.assert_allclose(q, ref, rtol=0, atol=1e-10)
    closed = np.concatenate([np.asarray(x) for x in four_bar.configuration(theta, a, b, c, d)])
    np.testing.assert_allclose(q, closed, rtol=0, atol=1e-10)


def test_assemble_raises_when_links_cannot_close():
    """A four-bar with crank + coupler + rocker = 0.3 < ground link 1.0 cannot close: assemble
    raises, the message says 'assemble' and names the pair keeping the largest residual."""
    m = mb.Mechanism()
    crank = m.body("crank", mass=1.0, inertia=0.01, q=(0.05, 0.0, 0.0))
    coupler = m.body("coupler", mass=1.0, inertia=0.01, q=(0.15, 0.0, 0.0))
    rocker = m.body("rocker", mass=1.0, inertia=0.01, q=(0.95, 0.0, 0.0))
    m.add(mb.Revolute("O2", m.ground, crank, s_i=(0.0, 0.0), s_j=(-0.05, 0.0)))
    m.add(mb.Revolute("A", crank, coupler, s_i=(0.05, 0.0), s_j=(-0.05, 0.0)))
    m.add(mb.Revolute("B", coupler, rocker, s_i=(0.05, 0.0), s_j=(0.05, 0.0)))
    m.add(mb.Revolute("O4", rocker, m.ground, s_i=(-0.05, 0.0), s_j=(1.0, 0.0)))
    model = m.build()
    with pytest.raises(Exception) as info:
        np.asarray(jax.jit(mb.assemble)(model, model.q0))
    message = str(info.value)
    assert "assemble" in message
    assert any(f"pair {name!r}" in message for name in model.pair_names), message


def test_assemble_implicit_derivatives():
    """Implicit derivative of assemble (the iterations are not differentiated), of
    q* = assemble(build(b), q_init) with respect to the coupler length b and to q_init:
    - at q_init off the manifold (multipliers and curvature terms non-zero): jacfwd in b and
      in q_init equal central finite differences (h = 1e-5; relative 1e-6); reverse mode
      through assemble is exercised by tests/test_linkage_optimization.py;
    - at an assembled q_init, d q*/d q_init equals the orthogonal projector onto null(Phi_q)
      (numpy SVD), to 1e-9."""
    rng = np.random.default_rng(3)
    base = four_bar.build()
    q_init = np.asarray(base.q0 + 1e-2 * rng.standard_normal(base.n))

    def solve(b, q):
        return mb.assemble(four_bar.build(b=b), q)

    jac = jax.jit(jax.jacfwd(solve, argnums=(0, 1)))

    def fd_solve(b, q):
        return np.asarray(_assemble_jit(four_bar.build(b=b), jnp.asarray(q), 0.0)[0])

    b0, h = 0.35, 1e-5
    dq_db, dq_dq = (np.asarray(x) for x in jac(b0, q_init))
    fd_b = (fd_solve(b0 + h, q_init) - fd_solve(b0 - h, q_init)) / (2 * h)
    fd_q = np.stack(
        [
            (fd_solve(b0, q_init + h * e) - fd_solve(b0, q_init - h * e)) / (2 * h)
            for e in np.eye(base.n)
        ],
        axis=1,
    )
    assert np.max(np.abs(fd_b)) > 0.1
    np.testing.assert_allclose(dq_db, fd_b, rtol=0, atol=1e-6 * np.max(np.abs(fd_b)))
    np.testing.assert_allclose(dq_dq, fd_q, rtol=0, atol=1e-6 * np.max(np.abs(fd_q)))

    q_on, _, J = (np.asarray(x) for x in _assemble_jit(base, base.q0, 0.0))
    P = np.asarray(jac(b0, q_on)[1])
    N = null_space(J, 1e-10)
    np.testing.assert_allclose(P, N @ N.T, rtol=0, atol=1e-9)


# ------------------------------------------------------------------------------------------
# 4. consistent_velocity
# ------------------------------------------------------------------------------------------
def test_consistent_velocity_is_least_squares_projection():
    """Mobile robot (C of rank 20 with 22 rows: redundant) at q assembled at t = 1 s, where the
    steering driver moves (b != 0): the projected velocity satisfies C qd* + b = 0 (1e-12),
    equals numpy's minimum-norm least-squares projection qd - lstsq(C, C qd + b) (1e-12), and
    is the closest such velocity: qd* - qd is orthogonal to null(C), and moving along null(C)
    keeps C qd + b = 0 but increases the distance to qd."""
    model, t = mobile_robot.build(), 1.0
    rng = np.random.default_rng(11)
    qd = rng.standard_normal(model.n)
    _, r, _, qd_star, C, b = (np.asarray(x) for x in _terms_jit(model, model.q0, qd, t))
    assert np.max(np.abs(r)) < 1e-12
    assert np.max(np.abs(b)) > 1e-3  # the driver's rate enters b
    assert np.max(np.abs(C @ qd_star + b)) < 1e-12
    correction = np.linalg.lstsq(C, C @ qd + b, rcond=1e-10)[0]
    np.testing.assert_allclose(qd_star, qd - correction, rtol=0, atol=1e-12)
    N = null_space(C, 1e-10)
    assert N.shape[1] == 1  # dof of the robot
    assert np.max(np.abs(N.T @ (qd_star - qd))) < 1e-12
    # any other consistent velocity is farther from qd
    for z in rng.standard_normal((5, N.shape[1])):
        other = qd_star + 1e-3 * N @ z
        assert np.max(np.abs(C @ other + b)) < 1e-12
        assert np.linalg.norm(other - qd) > np.linalg.norm(qd_star - qd)


def test_consistent_velocity_raises_for_contradictory_drivers():
    """A crank driven twice, at rates 1 and 2 rad/s (positions agree at t = 0): no velocity
    satisfies both drivers, consistent_velocity raises naming itself; with equal rates (redundant
    but consistent drivers) the same compiled call succeeds and gives the crank rate 1."""

    def crank_model(second_rate):
        m = mb.Mechanism()
        crank = m.body("crank", mass=1.0, inertia=0.01, q=(0.05, 0.0, 0.0))
        m.add(mb.Revolute("O", m.ground, crank, s_i=(0.0, 0.0), s_j=(-0.05, 0.0)))
        m.add(mb.RelativeAngleDriver("motor", m.ground, crank, f=mb.drive.Linear(1.0)))
        if second_rate is not None:
            m.add(mb.AbsoluteDriver("angle", crank, 2, f=mb.drive.Linear(second_rate)))
        return m.build()

    project = jax.jit(mb.consistent_velocity)
    consistent = crank_model(1.0)  # same rate twice: redundant, not contradictory
    qd = project(consistent, consistent.q0, jnp.zeros(3))
    np.testing.assert_allclose(qd, [0.0, 0.05, 1.0], rtol=0, atol=1e-12)
    bad = crank_model(2.0)
    with pytest.raises(Exception, match="consistent_velocity"):
        np.asarray(project(bad, bad.q0, jnp.zeros(3)))


# ------------------------------------------------------------------------------------------
# 5. kinematics of a driven slider-crank (dof = 0)
# ------------------------------------------------------------------------------------------
R, L, THETA0, OMEGA = 0.1, 0.3, 0.3, 2.0
KIN_TS = np.linspace(0.0, 3.5, 36)  # 7 rad: more than a full crank revolution


def _slider_crank_closed_form(t):
    """q, qd, qdd of (crank, rod, slider) with theta = theta0 + omega t, derived by hand:
    A = r (cos, sin) theta, s = sqrt(l^2 - A_y^2), x_B = A_x + s, beta = -asin(A_y / l),
    s' = -A_y A_y' / s, s'' = -(A_y'^2 + A_y A_y'') / s - A_y^2 A_y'^2 / s^3,
    beta' = -A_y' / s, beta'' = -(A_y'' s - A_y' s') / s^2."""
    th = THETA0 + OMEGA * t
    ax, ay = R * np.cos(th), R * np.sin(th)
    axd, ayd = -OMEGA * ay, OMEGA * ax
    axdd, aydd = -(OMEGA**2) * ax, -(OMEGA**2) * ay
    s = np.sqrt(L**2 - ay**2)
    sd = -ay * ayd / s
    sdd = -(ayd**2 + ay * aydd) / s - ay**2 * ayd**2 / s**3
    beta = -np.arcsin(ay / L)
    betad = -ayd / s
    betadd = -(aydd * s - ayd * sd) / s**2
    z = np.zeros_like(t)

    def pack(ax, ay, th, s, beta):
        return np.stack([ax / 2, ay / 2, th, ax + s / 2, ay / 2, beta, ax + s, z, z], axis=-1)

    return (
        pack(ax, ay, th, s, beta),
        pack(axd, ayd, OMEGA + z, sd, betad),
        pack(axdd, aydd, z, sdd, betadd),
    )


def test_closed_form_reference_is_self_consistent():
    """The hand-derived rates of the reference agree with central finite differences of its
    positions (h = 1e-5, 1e-7), so the kinematics test below compares to a correct oracle."""
    h = 1e-5
    q_p, qd_p, _ = _slider_crank_closed_form(KIN_TS + h)
    q_m, qd_m, _ = _slider_crank_closed_form(KIN_TS - h)
    _, qd, qdd = _slider_crank_closed_form(KIN_TS)
    np.testing.assert_allclose((q_p - q_m) / (2 * h), qd, rtol=0, atol=1e-7)
    np.testing.assert_allclose((qd_p - qd_m) / (2 * h), qdd, rtol=0, atol=1e-7)


def test_kinematics_driven_slider_crank_matches_closed_form():
    """jax.jit(mb.kinematics) of the driven slider-crank (dof = 0) over 36 instants covering
    more than a revolution: q, qd, qdd equal the closed form to 1e-9."""
    model = slider_crank.build(R, L, theta0=THETA0, omega=OMEGA)
    assert model.n - model.m == 0
    res = jax.jit(mb.kinematics)(model, jnp.asarray(KIN_TS))
    q, qd, qdd = _slider_crank_closed_form(KIN_TS)
    np.testing.assert_allclose(res.ts, KIN_TS, rtol=0, atol=0)
    np.testing.assert_allclose(res.q, q, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.qd, qd, rtol=0, atol=1e-9)
    np.testing.assert_allclose(res.qdd, qdd, rtol=0, atol=1e-9)
