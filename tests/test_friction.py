"""Joint friction driven by the joint reactions (issue 21): `mb.RevoluteFriction`,
`mb.TranslationalFriction`, the coupled solve of `jaxmb._friction` in simulate, reactions,
inverse dynamics and statics.

References, each independent of jaxmb's equations:
- a block sliding on an incline and a block pushed off-centre along a guide: the 1-D motion
  m v' = m A - m B tanh(v / v_s) in closed form (derived in `slide_time`), on the slip side
  (A > B: it accelerates) and on the stick side (A < B: it creeps at v_s artanh(A / B), the
  regularization's stand-in for sticking; the pushed block jams by the two-edge model);
- a pendulum with pin friction: the energy lost per swing from the energy balance in the pin
  angle, dE/dtheta = -mu r |F(theta, E)|, with the pin force from the radial and tangential
  balance of the rod (scipy quadrature; Coulomb's law, the limit of small v_s);
"""

import diffrax
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import jaxmb as mb

G = 9.81
ALG_TOL = 1e-9  # float64 algebra on O(1)-conditioned matrices
RTOL, ATOL = 1e-10, 1e-12  # integration tolerances of the motions below
MOTION_TOL = 1e-7  # integrated velocities against closed forms: 1e3 times the tolerances


# ------------------------------------------------------------------------------------------
# 1-D sliding: closed form
# ------------------------------------------------------------------------------------------
def slide_time(v, A, B, vs):
    """t(v) + const for v' = A - B tanh(v / vs) (v >= 0).

    With x = v / vs, w = exp(2 x), tanh x = (w - 1) / (w + 1):
        A - B tanh x = (a w + b) / (w + 1),  a = A - B, b = A + B,
        dt = vs dx (w + 1) / (a w + b) = vs / 2 (w + 1) / (w (a w + b)) dw
           = vs / 2 [1 / (b w) + (b - a) / (b (a w + b))] dw,
        t = vs / 2 [ln(w) / b + (b - a) / (a b) ln|a w + b|]  (a != 0),
    valid on either side of the terminal speed v* = vs artanh(A / B) (where a w + b = 0).
    Written with ln w = 2 x and ln|a w + b| = 2 x + ln|a + b exp(-2 x)| (no overflow)."""
    a, b = A - B, A + B
    x = v / vs
    return vs / 2 * (2 * x / b + (b - a) / (a * b) * (2 * x + np.log(np.abs(a + b * np.exp(-2 * x)))))


def slide_velocity(t, v0, A, B, vs):
    """v(t) of v' = A - B tanh(v / vs), v(0) = v0 >= 0, by inverting `slide_time` (monotone in
    v between v0 and the terminal speed, or beyond v0 on the slip side). Within 1e-13 of the
    terminal speed (t(v) diverges there) it returns the terminal speed."""
    if t == 0.0:
        return v0
    target = slide_time(v0, A, B, vs) + t
    if A > B:
        hi = v0 + A * t + vs
        return brentq(lambda v: slide_time(v, A, B, vs) - target, v0, hi, xtol=1e-15, rtol=1e-14)
    terminal = vs * np.arctanh(A / B)
    near = terminal + np.sign(v0 - terminal) * 1e-13
    if (slide_time(near, A, B, vs) - target) * (slide_time(v0, A, B, vs) - target) > 0:
        return terminal
    lo, hi = sorted((v0, near))
    return brentq(lambda v: slide_time(v, A, B, vs) - target, lo, hi, xtol=1e-15, rtol=1e-14)


def test_slide_time_solves_its_equation():
    """The closed form's derivative is 1 / (A - B tanh(v / vs)) (central difference)."""
    for A, B in ((3.0, 1.0), (1.0, 3.0)):
        for v in (0.001, 0.01, 0.2):
            h = 1e-7
            slope = (slide_time(v + h, A, B, 0.01) - slide_time(v - h, A, B, 0.01)) / (2 * h)
            assert slope == pytest.approx(1 / (A - B * np.tanh(v / 0.01)), rel=1e-6)


# ------------------------------------------------------------------------------------------
# a block on an incline, a block pushed along a guide: one model structure (one compilation)
# ------------------------------------------------------------------------------------------
INCLINE = 0.3  # rad
BLOCK_MASS = 2.0
SLIDE_VS = 1e-2  # m/s
SLIDE_TS = np.linspace(0.0, 0.4, 9)
GUIDE_LENGTH = 0.1  # slider length l (m)


def block(mu, alpha=0.0, push=0.0, height=0.0, vs=SLIDE_VS):
    """A block (body i) on the ground (body j) inclined at alpha: the sliding axis is
    u = (cos alpha, sin alpha), the pair's v = Omega u its normal; gravity, and a push along u
    of `push` newtons at (0, height) in the block frame (above the sliding axis)."""
    m = mb.Mechanism()
    u = np.array([np.cos(alpha), np.sin(alpha)])
    body = m.body("block", mass=BLOCK_MASS, inertia=0.05, q=(0.0, 0.0, 0.0))
    m.add(mb.Translational("P", body, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0),
                           v=(-u[1], u[0])))
    m.add(mb.TranslationalFriction("fP", "P", mu=mu, length=GUIDE_LENGTH, velocity_scale=vs))
    m.add(mb.Force("push", body, s=(0.0, height), f=push * u))
    m.add(mb.Gravity((0.0, -G)))
    return m.build()


@pytest.fixture(scope="module")
def incline_runs():
    """Both sides of the regularization with one compiled program (mu is data): tan(0.3) =
    0.309, so mu = 0.2 slips (accelerates) and mu = 0.5 sticks (creeps); the block starts
    sliding down at 0.05 m/s."""
    down = -np.array([np.cos(INCLINE), np.sin(INCLINE), 0.0])
    runs = {}
    for mu in (0.2, 0.5):
        model = block(mu, alpha=INCLINE)
        traj = mb.simulate(model, model.q0, 0.05 * down, SLIDE_TS[-1], ts=SLIDE_TS,
                           rtol=RTOL, atol=ATOL)
        runs[mu] = (model, traj, np.asarray(traj.qd) @ down)
    return runs


@pytest.mark.parametrize("mu", [0.2, 0.5])
def test_incline_closed_form(incline_runs, mu):
    """v' = g sin(alpha) - mu g cos(alpha) tanh(v / vs) (the normal force m g cos(alpha) is
    the pair's multiplier, the moment is zero: gravity acts at the pair point), against
    `slide_velocity`; on the stick side (mu = 0.5) the block ends creeping at
    v* = vs artanh(tan(alpha) / mu)."""
    _, traj, v = incline_runs[mu]
    A, B = G * np.sin(INCLINE), mu * G * np.cos(INCLINE)
    want = [slide_velocity(t, v[0], A, B, SLIDE_VS) for t in SLIDE_TS]
    np.testing.assert_allclose(v, want, rtol=0, atol=MOTION_TOL)
    assert bool(traj.success)
    if mu == 0.5:
        assert v[-1] == pytest.approx(SLIDE_VS * np.arctanh(np.tan(INCLINE) / mu), rel=1e-6)
    else:
        # slipping well above vs: Coulomb's law, v = v0 + (A - B) t (tanh(5) = 0.9999)
        assert v[-1] == pytest.approx(v[0] + (A - B) * SLIDE_TS[-1], rel=1e-3)


def test_incline_reactions(incline_runs):
    """Reactions along the run: normal force m g cos(alpha), no moment; the friction force
    T = mu m g cos(alpha) tanh(v / vs) along the slip axis Omega v / |v| = (-cos, -sin)
    (down the slope, so the slip rate is v), its generalized force -T (-cos, -sin, 0) pushing
    the block up the slope, and the power it dissipates T v."""
    model, traj, v = incline_runs[0.5]
    rx = mb.reactions(model, traj)
    lam = np.asarray(rx.lam)
    np.testing.assert_allclose(lam[:, 0], BLOCK_MASS * G * np.cos(INCLINE), rtol=ALG_TOL)
    np.testing.assert_allclose(lam[:, 1], 0.0, atol=ALG_TOL)
    T = 0.5 * BLOCK_MASS * G * np.cos(INCLINE) * np.tanh(v / SLIDE_VS)
    np.testing.assert_allclose(np.asarray(rx.friction_force)[:, 0], T, rtol=ALG_TOL)
    down = -np.array([np.cos(INCLINE), np.sin(INCLINE), 0.0])
    np.testing.assert_allclose(np.asarray(rx.friction["fP"]), -T[:, None] * down[None, :],
                               atol=ALG_TOL)
    fr = mb.friction_forces(model, traj.q[3], traj.qd[3])
    assert bool(fr.converged)
    assert float(fr.power[0]) == pytest.approx(float(T[3] * v[3]), rel=ALG_TOL)
    assert float(fr.normal_load[0]) == pytest.approx(BLOCK_MASS * G * np.cos(INCLINE),
                                                     rel=ALG_TOL)


GUIDE_MU = 0.4


@pytest.mark.parametrize("push, height", [(12.0, 0.02), (40.0, 0.2)])
def test_pushed_block_two_edge_model(push, height):
    """The pair carries N = m g and the moment M = P h of the push (about the pair point; the
    friction and the inertia act along the axis through it), so the edges bear N / 2 +- M / l
    and the friction is mu (|N / 2 + M / l| + |N / 2 - M / l|) = mu max(m g, 2 P h / l):
    v' = P / m - mu max(m g, 2 P h / l) / m tanh(v / vs), against `slide_velocity`.
    P = 12 N at h = 0.02 m (2 P h / l = 4.8 N < m g): the weight sets the friction, the block
    slips. P = 40 N at h = 0.2 m: the moment sets it, and since mu 2 h / l = 1.6 > 1 the block
    jams whatever the push (the drawer effect): it creeps at vs artanh(l / (2 mu h))."""
    model = block(GUIDE_MU, push=push, height=height)
    ts = SLIDE_TS
    traj = mb.simulate(model, model.q0, jnp.array([0.02, 0.0, 0.0]), ts[-1], ts=ts,
                       rtol=RTOL, atol=ATOL)
    v = np.asarray(traj.qd[:, 0])
    A = push / BLOCK_MASS
    B = GUIDE_MU * max(BLOCK_MASS * G, 2 * push * height / GUIDE_LENGTH) / BLOCK_MASS
    want = [slide_velocity(t, v[0], A, B, SLIDE_VS) for t in ts]
    np.testing.assert_allclose(v, want, rtol=0, atol=MOTION_TOL)
    if height == 0.2:
        creep = SLIDE_VS * np.arctanh(GUIDE_LENGTH / (2 * GUIDE_MU * height))
        assert v[-1] == pytest.approx(creep, rel=1e-6)


# ------------------------------------------------------------------------------------------
# pendulum with pin friction
# ------------------------------------------------------------------------------------------
PEND_MASS, PEND_LENGTH = 1.0, 1.0  # a uniform rod pinned at one end
PEND_A = PEND_LENGTH / 2  # pin to centre of mass
PEND_JC = PEND_MASS * PEND_LENGTH**2 / 12
PEND_JO = PEND_JC + PEND_MASS * PEND_A**2
PEND_MU, PEND_RADIUS, PEND_VS = 0.1, 0.005, 1e-5
PEND_THETA0 = 0.8
PEND_T1 = 3.4  # two periods: four half swings


def pendulum(mu=PEND_MU, radius=PEND_RADIUS, theta0=PEND_THETA0, vs=PEND_VS):
    """The rod hangs from the ground pin O at its end; phi = theta is its angle from the
    downward vertical (centre of mass at a (sin, -cos))."""
    m = mb.Mechanism()
    rod = m.body("rod", mass=PEND_MASS, inertia=PEND_JC,
                 q=(PEND_A * np.sin(theta0), -PEND_A * np.cos(theta0), theta0))
    m.add(mb.Revolute("O", m.ground, rod, s_i=(0.0, 0.0), s_j=(0.0, PEND_A)))
    m.add(mb.RevoluteFriction("fO", "O", mu=mu, radius=radius, velocity_scale=vs))
    m.add(mb.Gravity((0.0, -G)))
    return m.build()


def pendulum_energy(q, qd):
    """Kinetic + potential energy (zero hanging at rest) of the rod from its coordinates."""
    q, qd = np.asarray(q), np.asarray(qd)
    kinetic = 0.5 * PEND_MASS * (qd[..., 0] ** 2 + qd[..., 1] ** 2) + 0.5 * PEND_JC * qd[..., 2] ** 2
    return kinetic + PEND_MASS * G * (q[..., 1] + PEND_A)


def pin_force(theta, E, s):
    """|F| at the pin for angle theta, energy E and direction s = sgn(theta_dot), Coulomb's
    law: along the rod F_r = m a theta_dot^2 + m g cos(theta) (centripetal balance), across it
    F_t = m g sin(theta) + m a theta_ddot, with J_O theta_ddot = -m g a sin(theta) - s mu r |F|
    (the tangential balance of the centre of mass, whose acceleration a theta_ddot has the
    friction torque in it: a fixed point, contracting by mu r m a / J_O = 1.5e-3)."""
    v2 = 2 * (E - PEND_MASS * G * PEND_A * (1 - np.cos(theta))) / PEND_JO
    radial = PEND_MASS * PEND_A * max(v2, 0.0) + PEND_MASS * G * np.cos(theta)
    F = abs(radial)
    for _ in range(8):
        acc = (-PEND_MASS * G * PEND_A * np.sin(theta) - s * PEND_MU * PEND_RADIUS * F) / PEND_JO
        F = np.hypot(radial, PEND_MASS * G * np.sin(theta) + PEND_MASS * PEND_A * acc)
    return F


def swing_energies(theta0, swings):
    """Energy as a function of theta over successive half swings from rest at theta0:
    dE/dtheta = -s mu r |F(theta, E)| (the pin torque mu r |F| does the work -mu r |F| |dtheta|),
    integrated by scipy in theta until E = V(theta) (the turning point). Returns a list of
    (s, dense E(theta)) and the amplitudes."""
    out, amplitudes, E, theta = [], [theta0], PEND_MASS * G * PEND_A * (1 - np.cos(theta0)), theta0
    for _ in range(swings):
        s = -np.sign(theta)

        def turning(th, y):
            return y[0] - PEND_MASS * G * PEND_A * (1 - np.cos(th))

        turning.terminal, turning.direction = True, -1  # E - V falls to 0 as theta goes on
        sol = solve_ivp(lambda th, y: [-s * PEND_MU * PEND_RADIUS * pin_force(th, y[0], s)],
                        (theta, 2 * s * abs(theta)), [E], events=turning, rtol=1e-12,
                        atol=1e-14, dense_output=True)
        theta, E = sol.t_events[0][0], sol.y_events[0][0][0]
        out.append((s, sol.sol))
        amplitudes.append(abs(theta))
    return out, np.array(amplitudes)


def test_pendulum_energy_loss_per_swing():
    """The rod's energy at every saved state against the energy balance in the pin angle
    (`swing_energies`, Coulomb's law): the same E(theta) within 1e-8 J over four half swings
    that lose 4 x ~6e-3 J. The regularization's deficit, where r |theta_dot| < vs near the
    turning points, is ~0.8 vs^2 / (2 r^2 theta_ddot) ~ 2e-7 rad of friction-free swing per
    turning point, i.e. ~1e-9 J; the integration's error ~1e-10 J.

    The amplitude decrements of that energy balance (so of the simulation, which follows it to
    1e-8 J, i.e. 1e-8 rad of amplitude) against the closed form for small mu,
    `first_order_loss` at the mean amplitude of the swing divided by m g a sin(mean): 2.7e-3
    rad per half swing (2 mu r / a = 2e-3 at small amplitude), equal to 1e-5 (they differ by
    terms of order (mu r / a)^2 relative, 2e-7 measured)."""
    model = pendulum()
    ts = np.linspace(0.0, PEND_T1, 171)
    traj = mb.simulate(model, model.q0, jnp.zeros(3), PEND_T1, ts=ts, rtol=RTOL, atol=ATOL)
    theta, omega = np.asarray(traj.q[:, 2]), np.asarray(traj.qd[:, 2])
    E = pendulum_energy(traj.q, traj.qd)
    swing = np.concatenate([[0], np.cumsum(np.sign(omega[1:]) * np.sign(omega[:-1]) < 0)])
    swing[0] = 0  # at rest: the first swing
    curves, amplitudes = swing_energies(PEND_THETA0, int(swing[-1]) + 1)
    want = np.array([curves[k][1](th)[0] for k, th in zip(swing, theta)])
    assert int(swing[-1]) + 1 == 4
    np.testing.assert_allclose(E, want, rtol=0, atol=1e-8)
    decrement = -np.diff(amplitudes)
    mean = (amplitudes[1:] + amplitudes[:-1]) / 2
    first_order = [first_order_loss(th) / (PEND_MASS * G * PEND_A * np.sin(th)) for th in mean]
    np.testing.assert_allclose(decrement, first_order, rtol=1e-5)


def first_order_loss(amplitude):
    """Energy lost in a half swing of the given amplitude, to first order in mu: the work
    mu r int |F_0| dtheta of the pin torque along the frictionless swing, whose pin force has
    F_r = m g cos(theta) + m a theta_dot^2, theta_dot^2 = 2 m g a (cos(theta) - cos(amplitude))
    / J_O, and F_t = m g sin(theta) J_c / J_O (J_O theta_ddot = -m g a sin(theta))."""
    from scipy.integrate import quad

    def force(th):
        radial = PEND_MASS * G * np.cos(th) + PEND_MASS * PEND_A * (
            2 * PEND_MASS * G * PEND_A * (np.cos(th) - np.cos(amplitude)) / PEND_JO)
        return np.hypot(radial, PEND_MASS * G * np.sin(th) * PEND_JC / PEND_JO)

    return PEND_MU * PEND_RADIUS * quad(force, -amplitude, amplitude, epsabs=1e-14)[0]
