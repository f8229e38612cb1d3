"""Joint friction driven by the joint reactions (issue 21): `mb.RevoluteFriction`,
`mb.TranslationalFriction`, the coupled solve of `jaxmb._analyses.friction` in simulate, reactions,
inverse dynamics and statics.

References, each independent of jaxmb's equations:
- a block sliding on an incline and a block pushed off-centre along a guide: the 1-D motion
  m v' = m A - m B tanh(v / v_s) in closed form (derived in `slide_time`), on the slip side
  (A > B: it accelerates) and on the stick side (A < B: it creeps at v_s artanh(A / B), the
  regularization's stand-in for sticking; the pushed block jams by the two-edge model);
- a pendulum with pin friction: the energy lost per swing from the energy balance in the pin
  angle, dE/dtheta = -mu r |F(theta, E)|, with the pin force from the radial and tangential
  balance of the rod (scipy quadrature; Coulomb's law, the limit of small v_s);
- a slider-crank with friction in every pair: the power balance motor power = dE/dt +
  dissipation, integrated along a forward run (numpy energy, Gauss-Legendre quadrature of
  the saved states), at every instant of the inverse dynamics at constant speed (numpy dE/dt)
  and of the quasi-static driving (numpy virtual power); gradients of the work over a cycle
  against central differences;
- the redundant triple-crank parallelogram with pin friction under two joint stiffness
  distributions (mb.Compliance): each run's energy balance, a numpy / scipy re-derivation of
  the compliance-resolved reactions and of the friction fixed point at one state, and the
  error of a method that picks an arbitrary load sharing;
- bad specifications: the defect itself (the message names the element and the problem).
"""

import dataclasses

import equinox as eqx
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq, fsolve

import jaxmb as mb
from jaxmb.elements.friction import check_friction
from jaxmb.models import parallelogram, slider_crank

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
    return (
        vs / 2 * (2 * x / b + (b - a) / (a * b) * (2 * x + np.log(np.abs(a + b * np.exp(-2 * x)))))
    )


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
    m.add(mb.Translational("P", body, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(-u[1], u[0])))
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
        traj = mb.simulate(
            model, model.q0, 0.05 * down, SLIDE_TS[-1], ts=SLIDE_TS, rtol=RTOL, atol=ATOL
        )
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
    np.testing.assert_allclose(
        np.asarray(rx.friction["fP"]), -T[:, None] * down[None, :], atol=ALG_TOL
    )
    fr = mb.friction_forces(model, traj.q[3], traj.qd[3])
    assert bool(fr.converged)
    assert float(fr.power[0]) == pytest.approx(float(T[3] * v[3]), rel=ALG_TOL)
    assert float(fr.normal_load[0]) == pytest.approx(BLOCK_MASS * G * np.cos(INCLINE), rel=ALG_TOL)


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
    traj = mb.simulate(
        model, model.q0, jnp.array([0.02, 0.0, 0.0]), ts[-1], ts=ts, rtol=RTOL, atol=ATOL
    )
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
    rod = m.body(
        "rod",
        mass=PEND_MASS,
        inertia=PEND_JC,
        q=(PEND_A * np.sin(theta0), -PEND_A * np.cos(theta0), theta0),
    )
    m.add(mb.Revolute("O", m.ground, rod, s_i=(0.0, 0.0), s_j=(0.0, PEND_A)))
    m.add(mb.RevoluteFriction("fO", "O", mu=mu, radius=radius, velocity_scale=vs))
    m.add(mb.Gravity((0.0, -G)))
    return m.build()


def pendulum_energy(q, qd):
    """Kinetic + potential energy (zero hanging at rest) of the rod from its coordinates."""
    q, qd = np.asarray(q), np.asarray(qd)
    kinetic = (
        0.5 * PEND_MASS * (qd[..., 0] ** 2 + qd[..., 1] ** 2) + 0.5 * PEND_JC * qd[..., 2] ** 2
    )
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
        sol = solve_ivp(
            lambda th, y: [-s * PEND_MU * PEND_RADIUS * pin_force(th, y[0], s)],
            (theta, 2 * s * abs(theta)),
            [E],
            events=turning,
            rtol=1e-12,
            atol=1e-14,
            dense_output=True,
        )
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
            2 * PEND_MASS * G * PEND_A * (np.cos(th) - np.cos(amplitude)) / PEND_JO
        )
        return np.hypot(radial, PEND_MASS * G * np.sin(th) * PEND_JC / PEND_JO)

    return PEND_MU * PEND_RADIUS * quad(force, -amplitude, amplitude, epsabs=1e-14)[0]


# ------------------------------------------------------------------------------------------
# helpers: friction (and forces) added to the library's models; Gauss-Legendre time grids
# ------------------------------------------------------------------------------------------
def with_friction(model, friction, forces=()):
    """`model` (from jaxmb.models) with the friction elements `friction` and the force
    elements `forces` added, checked as `Mechanism.build` checks them."""
    model = dataclasses.replace(
        model, friction=tuple(friction), force_elements=model.force_elements + tuple(forces)
    )
    check_friction(model)
    return model


def gauss_grid(t1, panels, nodes):
    """Composite Gauss-Legendre quadrature on [0, t1]: the save times (each panel's start, then
    its `nodes` Gauss points; t1 last) and the weights of the Gauss points of one panel. A
    smooth integrand's error is O((h / tau)^(2 nodes)) for panels h and features of time
    scale tau."""
    x, w = np.polynomial.legendre.leggauss(nodes)
    h = t1 / panels
    starts = h * np.arange(panels)
    ts = np.concatenate([starts[:, None], starts[:, None] + h / 2 * (x[None, :] + 1)], axis=1)
    return np.append(ts.ravel(), t1), h / 2 * w


def panel_integrals(values, nodes, w):
    """int_0^{t_j} f dt at every panel end t_j (0 first) from f at the `gauss_grid` times."""
    gauss = values[:-1].reshape(-1, nodes + 1)[:, 1:]
    return np.concatenate([[0.0], np.cumsum(gauss @ w)])


def panel_ends(values, nodes):
    """The values at the panel ends of a `gauss_grid` (t = 0 first, t1 last)."""
    return np.append(values[: -1 : nodes + 1], values[-1])


def rigid_energy(q, qd, masses, inertias, g=G):
    """Kinetic + gravitational energy (numpy) of bodies with centroidal coordinates, gravity
    (0, -g): sum_k m_k / 2 |v_k|^2 + J_k / 2 omega_k^2 + m_k g y_k."""
    q, qd = np.asarray(q), np.asarray(qd)
    m, J = np.asarray(masses), np.asarray(inertias)
    v2 = qd[..., 0::3] ** 2 + qd[..., 1::3] ** 2
    return np.sum(m / 2 * v2 + J / 2 * qd[..., 2::3] ** 2 + m * g * q[..., 1::3], axis=-1)


# ------------------------------------------------------------------------------------------
# a slider-crank with friction in every pair (revolutes O, A, B and the slider P)
# ------------------------------------------------------------------------------------------
CRANK, ROD = 0.1, 0.3  # m
M_CRANK, M_ROD, M_SLIDER, J_SLIDER = 5.0, 2.0, 2.0, 1e-3  # kg, kg m^2 (the model's)
SC_MASSES = (M_CRANK, M_ROD, M_SLIDER)
SC_THETA0 = 0.3  # rad
SC_MU, SC_PIN, SC_PIN_VS = 0.2, 0.01, 5e-3  # pins: mu, radius (m), velocity scale (m/s)
SC_GUIDE_LENGTH, SC_GUIDE_VS = 0.1, 0.1  # the slider: length l, velocity scale (m/s)
SC_TORQUE = 1.0  # N m on the crank (forward dynamics)
SC_OMEGA = 4 * np.pi  # rad/s, the motor's constant speed (inverse dynamics)


def sc_inertias(crank=CRANK):
    return (M_CRANK * crank**2 / 12, M_ROD * ROD**2 / 12, J_SLIDER)


def sc_friction(mu=SC_MU):
    """Friction in every pair of the slider-crank: pin friction in O, A, B, the two-edge model
    in P. The slider is heavy enough (2 kg) that its normal force keeps one sign and exceeds
    2 |M| / l, so no edge load changes sign (a kink of the dissipated power in time)."""
    pins = [
        mb.RevoluteFriction(f"f{p}", p, mu=mu, radius=SC_PIN, velocity_scale=SC_PIN_VS)
        for p in "OAB"
    ]
    return pins + [
        mb.TranslationalFriction(
            "fP", "P", mu=mu, length=SC_GUIDE_LENGTH, velocity_scale=SC_GUIDE_VS
        )
    ]


def sc_slip_rates(qd):
    """Slip rates in numpy, by the elements' definitions: relative angular velocities
    phid_j - phid_i of O (ground, crank), A (crank, rod), B (rod, slider); for P the slider's
    velocity along u = Omega v = (-1, 0) (v = (0, 1) on the ground)."""
    qd = np.asarray(qd)
    return np.stack(
        [qd[..., 2], qd[..., 5] - qd[..., 2], qd[..., 8] - qd[..., 5], -qd[..., 6]], axis=-1
    )


SC_T1, SC_PANELS, SC_NODES = 0.4, 200, 6


@jax.jit
def run_and_friction(model, qd0, ts, method):
    """simulate from (q0, qd0), then the friction solve (`mb.friction_forces` with `method`) at
    every saved state: one compiled program per model structure (the numbers are data)."""
    traj = mb.simulate(model, model.q0, qd0, ts[-1], ts=ts, rtol=RTOL, atol=ATOL, method=method)
    solve = jax.vmap(lambda q, qd: mb.friction_forces(model, q, qd, method=method))
    return traj, solve(traj.q, traj.qd)


@pytest.fixture(scope="module")
def crank_run():
    """Forward dynamics: the crank driven by the constant torque SC_TORQUE, starting at
    18 rad/s; in 0.4 s it turns more than a revolution (6.6 rad) at 9.6 to 25 rad/s, and the
    slip rates of pin B (the rod's angular velocity) and of the slider (P) reverse twice."""
    base = slider_crank.build(
        r=CRANK, l=ROD, m_crank=M_CRANK, m_rod=M_ROD, m_slider=M_SLIDER, theta0=SC_THETA0
    )
    crank = base.pair("O").j
    model = with_friction(base, sc_friction(), [mb.Torque("motor", crank, SC_TORQUE)])
    ts, w = gauss_grid(SC_T1, SC_PANELS, SC_NODES)
    qd0 = mb.consistent_velocity(model, model.q0, jnp.zeros(9).at[2].set(20.0))
    traj, fr = run_and_friction(model, qd0, jnp.asarray(ts), mb.MinNorm())
    return model, traj, fr, w


def test_slider_crank_power_balance_forward(crank_run):
    """E(t) - E(0) = int_0^t (tau omega_crank - sum_k T_k s_dot_k) dt at every panel end of
    the save grid: E (kinetic + potential) in numpy from q, qd and the model's masses; the
    motor power from the saved crank speed; the friction powers those of
    `mb.friction_forces` at the saved states; the integral by composite Gauss-Legendre
    quadrature on the saved states (6 points per 2 ms panel: the sharpest feature, the slider's
    reversal, lasts v_s / (r omega^2) ~ 2 ms; with half or twice the panels the largest
    deviation below changes by less than 6e-10 J).

    Tolerance: 1e-8 times the energy that flows (motor work + dissipation, 12.7 J), i.e. 100
    times the integration rtol (measured 4.6e-9 J; it follows the integration's accuracy:
    4.5e-7 J at rtol 1e-8, 4.5e-11 J at 1e-12). Each pair dissipates more than 0.1 J (O 2.4,
    A 1.1, B 0.16, P 2.4 J), so leaving any one out fails. The friction powers are the
    products T_k s_dot_k (slip rates in numpy), equal the power of the generalized friction
    forces -Q_k . qd, and are >= 0."""
    model, traj, fr, w = crank_run
    assert bool(traj.success)
    q, qd = np.asarray(traj.q), np.asarray(traj.qd)
    power = np.asarray(fr.power)
    np.testing.assert_allclose(
        power, np.asarray(fr.force) * sc_slip_rates(qd), rtol=ALG_TOL, atol=ALG_TOL
    )
    np.testing.assert_allclose(
        power, -np.einsum("tkn,tn->tk", np.asarray(fr.generalized), qd), rtol=ALG_TOL, atol=ALG_TOL
    )
    assert power.min() >= 0.0
    energy = rigid_energy(q, qd, SC_MASSES, sc_inertias())
    motor = panel_integrals(SC_TORQUE * qd[:, 2], SC_NODES, w)
    lost = np.stack([panel_integrals(p, SC_NODES, w) for p in power.T], axis=1)
    gained = panel_ends(energy, SC_NODES) - energy[0]
    flow = motor[-1] + lost[-1].sum()
    np.testing.assert_allclose(gained, motor - lost.sum(axis=1), rtol=0, atol=1e-8 * flow)
    assert lost[-1].min() > 0.1 and q[-1, 2] - q[0, 2] > 2 * np.pi
    assert np.all(np.asarray(fr.converged))


# ------------------------------------------------------------------------------------------
# the slider-crank driven at constant speed: inverse dynamics, quasi-statics, gradients
# ------------------------------------------------------------------------------------------
CYCLE = 2 * np.pi / SC_OMEGA  # s, one revolution
CYCLE_PANELS, CYCLE_NODES = 16, 8
CYCLE_TS, _CYCLE_W = gauss_grid(CYCLE, CYCLE_PANELS, CYCLE_NODES)
CYCLE_TS = CYCLE_TS[:-1].reshape(CYCLE_PANELS, -1)[:, 1:].ravel()  # the Gauss points only
CYCLE_W = np.tile(_CYCLE_W, CYCLE_PANELS)


def driven_crank(mu, crank):
    """The slider-crank driven at SC_OMEGA (crank angle SC_THETA0 + omega t), friction in
    every pair; `mu` (all pairs) and the crank length traceable."""
    base = slider_crank.build(
        r=crank,
        l=ROD,
        m_crank=M_CRANK,
        m_rod=M_ROD,
        m_slider=M_SLIDER,
        theta0=SC_THETA0,
        omega=SC_OMEGA,
    )
    return with_friction(base, sc_friction(mu))


def motor_power(model, traj, rx):
    """The driver's power: its generalized force -C_motor^T lambda_motor times qd."""
    return jnp.einsum("tn,tn->t", rx.generalized["motor"], traj.qd)


def cycle_work(params):
    """W(mu, crank) = int_0^T tau omega dt over one revolution (Gauss-Legendre on the inverse
    dynamics at CYCLE_TS): the energy the friction dissipates in a cycle (E is periodic). Aux:
    the inverse dynamics and, at every instant, the quasi-static reactions
    statics(velocity=qd)."""
    model = driven_crank(*params)
    traj, rx = mb.inverse_dynamics(model, CYCLE_TS)
    quasi = jax.vmap(lambda q, qd, t: mb.statics(model, q, t, velocity=qd))(
        traj.q, traj.qd, traj.ts
    )
    return jnp.sum(CYCLE_W * motor_power(model, traj, rx)), (traj, rx, quasi)


CYCLE_PARAMS = np.array([SC_MU, CRANK])


@pytest.fixture(scope="module")
def cycle():
    """One compiled program: value_and_grad of `cycle_work` (jitted once; the central
    differences call it again with other numbers)."""
    program = jax.jit(jax.value_and_grad(cycle_work, has_aux=True))
    return program, program(jnp.asarray(CYCLE_PARAMS))


def test_slider_crank_power_balance_inverse_dynamics(cycle):
    """At every instant of the driven cycle, the motor power (the driver's reaction torque
    times omega) equals dE/dt + sum_k T_k s_dot_k: dE/dt = qd^T M qdd + m g . v in numpy (M from
    the model's masses, qd and qdd of the driven motion), the friction forces T_k of the
    inverse dynamics, the slip rates in numpy. Algebraic: 1e-9 of the largest power (88 W;
    measured 1e-13). The motor torque is also -lambda_motor (C_motor = d(phi_crank)/dq). Over
    the cycle the motor work equals the dissipation (E periodic; its smooth dE/dt integrates to
    zero by the quadrature, 1e-9 relative); with mu = 0.2 the cycle dissipates about 4 J.

    The driven motion itself is the closed form at theta = theta0 + omega t (`closed_form`),
    1e-9; its velocity and acceleration by 5-point central
    differences of it (step 1 ms: truncation h^4 q^(5) / 30 ~ 1e-9 relative), 1e-7 relative."""
    _, ((work, (traj, rx, _)), _) = cycle
    q, qd, qdd = np.asarray(traj.q), np.asarray(traj.qd), np.asarray(rx.qdd)

    def closed_form(t):
        """q at time t: crank tip A = r (cos, sin), slider at x_B = r cos + sqrt(l^2 - A_y^2)."""
        theta = SC_THETA0 + SC_OMEGA * t
        ax, ay = CRANK * np.cos(theta), CRANK * np.sin(theta)
        xb = ax + np.sqrt(ROD**2 - ay**2)
        zero = np.zeros_like(t)
        return np.stack(
            [
                ax / 2,
                ay / 2,
                theta,
                (ax + xb) / 2,
                ay / 2,
                np.arctan2(-ay, xb - ax),
                xb,
                zero,
                zero,
            ],
            axis=-1,
        )

    h = 1e-3
    at = {k: closed_form(CYCLE_TS + k * h) for k in (-2, -1, 0, 1, 2)}
    velocity = (at[-2] - 8 * at[-1] + 8 * at[1] - at[2]) / (12 * h)
    acceleration = (-at[-2] + 16 * at[-1] - 30 * at[0] + 16 * at[1] - at[2]) / (12 * h**2)
    np.testing.assert_allclose(q, at[0], rtol=0, atol=ALG_TOL)
    for got, ref in ((qd, velocity), (qdd, acceleration)):
        np.testing.assert_allclose(got, ref, rtol=0, atol=1e-7 * np.max(np.abs(ref)))
    M = np.repeat(SC_MASSES, 3)
    M[2::3] = sc_inertias()
    weight = np.zeros(9)
    weight[1::3] = -np.asarray(SC_MASSES) * G
    dE = np.einsum("tn,tn->t", qd, M * qdd) - qd @ weight
    dissipation = np.sum(np.asarray(rx.friction_force) * sc_slip_rates(qd), axis=1)
    driven = driven_crank(SC_MU, CRANK)
    torque = -np.asarray(rx.lam)[:, driven.rows("motor")][:, 0]
    power = torque * SC_OMEGA
    np.testing.assert_allclose(
        np.asarray(motor_power(driven, traj, rx)),
        power,
        rtol=0,
        atol=ALG_TOL * np.max(np.abs(power)),
    )
    np.testing.assert_allclose(
        power, dE + dissipation, rtol=0, atol=ALG_TOL * np.max(np.abs(power))
    )
    assert dissipation.min() >= 0.0
    assert float(work) == pytest.approx(np.sum(CYCLE_W * dissipation), rel=ALG_TOL)
    assert 1.0 < float(work) < 10.0


def test_slider_crank_quasi_static_torque(cycle):
    """statics(velocity=qd): the quasi-static driving torque (inertia neglected, friction
    kept) satisfies the virtual-power balance tau omega = -m g . v + sum_k T_k s_dot_k (numpy:
    gravity's power from the masses and velocities, the friction forces of the quasi-static
    solve, slip rates in numpy), 1e-9 of the largest power (measured 1e-13). It differs from
    the dynamic torque by up to 3.6 N m (the crank runs at 2 rev/s: inertia matters)."""
    _, ((_, (traj, rx, quasi)), _) = cycle
    qd = np.asarray(traj.qd)
    weight = np.zeros(9)
    weight[1::3] = -np.asarray(SC_MASSES) * G
    driven = driven_crank(SC_MU, CRANK)
    torque = -np.asarray(quasi.lam)[:, driven.rows("motor")][:, 0]
    dissipation = np.sum(np.asarray(quasi.friction_force) * sc_slip_rates(qd), axis=1)
    power = torque * SC_OMEGA
    np.testing.assert_allclose(
        power, -qd @ weight + dissipation, rtol=0, atol=ALG_TOL * np.max(np.abs(power))
    )
    np.testing.assert_allclose(np.asarray(quasi.qdd), 0.0, atol=0)
    dynamic = -np.asarray(rx.lam)[:, driven.rows("motor")][:, 0]
    assert np.max(np.abs(dynamic - torque)) > 1.0


GRAD_RTOL = 1e-6  # central differences, step 1e-5 relative (see the test)


def test_cycle_work_gradient(cycle):
    """d W / d mu and d W / d crank length (implicit derivatives of the friction solve,
    through the kinematics and the build) against central differences of the same compiled
    program, step 1e-5 relative: truncation ~(1e-5)^2 relative, round-off ~1e-16 / 1e-5,
    the kinematics' Newton tolerance 1e-12 / 1e-5 = 1e-7 at most: 1e-6 relative (measured
    4e-11). The derivative in mu is not W / mu (the friction changes the reactions that load
    it: mu dW/dmu = 0.965 W)."""
    program, ((work, _), grad) = cycle
    for k, p in enumerate(CYCLE_PARAMS):
        h = 1e-5 * p
        up, down = (program(jnp.asarray(CYCLE_PARAMS).at[k].add(s))[0][0] for s in (h, -h))
        assert float(grad[k]) == pytest.approx(float(up - down) / (2 * h), rel=GRAD_RTOL)
    assert abs(float(grad[0]) * SC_MU / float(work) - 1.0) > 1e-3


# ------------------------------------------------------------------------------------------
# the redundant triple-crank parallelogram with pin friction: the motion depends on the
# stiffness of the joints
# ------------------------------------------------------------------------------------------
PINS = ("O1", "O2", "O3", "A1", "A2", "A3")
PG_THETA0, PG_LOAD = -0.9, (3.0, -5.0)  # rad (below the pivots); N at the coupler's end
PG_MASSES, PG_LENGTHS, PG_D = (0.5, 0.5, 0.5, 1.0), (0.2, 0.2, 0.2, 0.4), 0.4
PG_MU, PG_PIN, PG_VS = 0.3, 0.02, 5e-3
PG_T1, PG_PANELS, PG_NODES = 1.0, 100, 6
PG_STIFF = 1e8  # N/m, every pin but crank 3's
PG_CRANK3 = (1e8, 1e6)  # N/m, crank 3's pins O3 and A3: as stiff as the others, or soft


def pg_method(k3):
    """Crank 3's pins at stiffness k3, every other pin at PG_STIFF (one method structure)."""
    return mb.Compliance({"O3": k3, "A3": k3}, default=PG_STIFF)


def pg_energy(q, qd):
    """Kinetic + gravitational energy + the potential -f . r_E of the constant load f at the
    coupler's end r_E = (x, y) + d / 2 (cos phi, sin phi) (numpy)."""
    q = np.asarray(q)
    inertias = [m * length**2 / 12 for m, length in zip(PG_MASSES, PG_LENGTHS)]
    x, y, phi = q[:, 9], q[:, 10], q[:, 11]
    end = (x + PG_D / 2 * np.cos(phi), y + PG_D / 2 * np.sin(phi))
    return rigid_energy(q, qd, PG_MASSES, inertias) - PG_LOAD[0] * end[0] - PG_LOAD[1] * end[1]


@pytest.fixture(scope="module")
def para_runs():
    """The linkage released at rest with its cranks at -0.9 rad (away from the change points
    0 and pi, where the parallelogram is singular and the friction would lock it), under
    gravity and a load at the coupler's end, pin friction in all six revolutes (no revolute
    reaction is unique: p = 1). For each stiffness of crank 3's pins: the run and the friction
    solve at its saved states (`run_and_friction`: one program, the stiffness data)."""
    model = with_friction(
        parallelogram.build(theta=PG_THETA0, motor=False, load=PG_LOAD),
        [
            mb.RevoluteFriction(f"f{p}", p, mu=PG_MU, radius=PG_PIN, velocity_scale=PG_VS)
            for p in PINS
        ],
    )
    ts, w = gauss_grid(PG_T1, PG_PANELS, PG_NODES)
    runs = {
        k3: run_and_friction(model, jnp.zeros(model.n), jnp.asarray(ts), pg_method(k3))
        for k3 in PG_CRANK3
    }
    return model, runs, w


def test_parallelogram_motion_depends_on_stiffness(para_runs):
    """The two stiffness distributions share the load differently between the cranks, so the
    pins' normal loads, their friction and the motion differ: by more than 0.01 (rad, m), 1e5
    times the motion tolerance (measured 0.025; the normal loads by up to 8.8 N). Each run satisfies its own energy balance, E(0) - E(t) =
    int_0^t sum_k T_k s_dot_k dt (E in numpy with the load's potential; the friction powers of
    `mb.friction_forces` with the run's Compliance; Gauss-Legendre on the saved states, 6 points
    per 10 ms panel against the ~6 ms of a turning point, v_s / (r theta_ddot)), to 1e-8 of
    the energy lost (100 times the integration rtol; measured 6e-11 J of 0.56 J)."""
    model, runs, w = para_runs
    for k3, (traj, fr) in runs.items():
        assert bool(traj.success)
        lost = panel_integrals(np.asarray(fr.power).sum(axis=1), PG_NODES, w)
        energy = panel_ends(pg_energy(traj.q, traj.qd), PG_NODES)
        np.testing.assert_allclose(
            energy[0] - energy, lost, rtol=0, atol=1e-8 * lost[-1], err_msg=f"k3 = {k3}"
        )
        assert lost[-1] > 0.1 and np.all(np.asarray(fr.converged))
    (a, fa), (b, fb) = runs.values()
    assert np.max(np.abs(np.asarray(a.q) - np.asarray(b.q))) > 1e5 * MOTION_TOL
    assert np.max(np.abs(np.asarray(fa.normal_load) - np.asarray(fb.normal_load))) > 1.0


def pg_terms(model, q, qd):
    """The parallelogram's C, gamma, M, F in numpy from its elements' data (all pairs are
    revolutes, rows r_i + A_i s_i - r_j - A_j s_j = 0): C = [I, A_i Omega s_i, -I,
    -A_j Omega s_j], gamma = A_i s_i phid_i^2 - A_j s_j phid_j^2; M = diag(m, m, J); F the
    weights and the load f at the coupler's end (torque (A s) x f about the centre)."""
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    n = model.n
    rows = []
    gamma = []

    def rot(phi):
        return np.array([[np.cos(phi), -np.sin(phi)], [np.sin(phi), np.cos(phi)]])

    omega = np.array([[0.0, -1.0], [1.0, 0.0]])
    for pair in model.pairs:
        block, acc = np.zeros((2, n)), np.zeros(2)
        for body, s, sign in ((pair.i, pair.s_i, 1.0), (pair.j, pair.s_j, -1.0)):
            if body.is_ground:
                continue
            k = 3 * model.body_names.index(body.name)
            A = rot(q[k + 2])
            block[:, k : k + 2] = sign * np.eye(2)
            block[:, k + 2] = sign * A @ omega @ np.asarray(s)
            acc += sign * A @ np.asarray(s) * qd[k + 2] ** 2
        rows.append(block)
        gamma.append(acc)
    inertias = [m * length**2 / 12 for m, length in zip(PG_MASSES, PG_LENGTHS)]
    M = np.diag(np.ravel([(m, m, J) for m, J in zip(PG_MASSES, inertias)]))
    F = np.ravel([(0.0, -m * G, 0.0) for m in PG_MASSES])
    arm = rot(q[11]) @ np.array([PG_D / 2, 0.0])
    F[9:12] += [PG_LOAD[0], PG_LOAD[1], arm[0] * PG_LOAD[1] - arm[1] * PG_LOAD[0]]
    return np.concatenate(rows), np.concatenate(gamma), M, F


def compliance_friction_reference(model, q, qd, k):
    """The friction forces and multipliers at (q, qd) in numpy / scipy (`pg_terms`): for
    friction forces T the accelerations from M qdd + C^T lambda = F - G T, C qdd = gamma
    (lstsq: qdd is unique, lambda is not), the compliance-resolved multipliers
    lambda* = K C (C^T K C)^+ f of f = F - G T - M qdd (the displacement method,
    jaxmb/_reaction_methods/compliance.py), and the fixed point T = Phi(lambda*(T)),
    Phi_k = mu r |lambda_k| tanh(r s_dot_k / v_s), by scipy's fsolve (from T = 0). G's columns
    are the pins' ds/dq = e_phi_j - e_phi_i."""
    C, gamma, M, F = pg_terms(model, q, qd)
    n, rows = model.n, C.shape[0]
    G = np.zeros((n, len(PINS)))
    for j, pair in enumerate(model.pair(p) for p in PINS):
        for body, sign in ((pair.i, -1.0), (pair.j, 1.0)):
            if not body.is_ground:
                G[3 * model.body_names.index(body.name) + 2, j] = sign
    slip = G.T @ np.asarray(qd)
    K = np.diag(k)
    A = np.block([[M, C.T], [C, np.zeros((rows, rows))]])

    def multipliers(T):
        qdd = np.linalg.lstsq(A, np.concatenate([F - G @ T, gamma]), rcond=None)[0][:n]
        f = F - G @ T - M @ qdd
        return K @ C @ np.linalg.pinv(C.T @ K @ C, rcond=1e-12) @ f

    def friction(T):
        lam = multipliers(T)
        loads = [np.linalg.norm(lam[model.rows(p)]) for p in PINS]
        return PG_MU * PG_PIN * np.array(loads) * np.tanh(PG_PIN * slip / PG_VS)

    T = fsolve(lambda T: T - friction(T), np.zeros(len(PINS)), xtol=1e-14)
    return T, multipliers(T)


@pytest.mark.parametrize("k3", PG_CRANK3)
def test_parallelogram_friction_matches_numpy(para_runs, k3):
    """At one saved state of each run (t = 0.31 s, the cranks turning at -1.7 rad/s),
    `mb.friction_forces` with the run's Compliance against `compliance_friction_reference`:
    friction forces and multipliers to 1e-9 relative (algebra; measured 6e-15)."""
    model, runs, _ = para_runs
    traj, fr = runs[k3]
    j = 31 * (PG_NODES + 1) + 3
    q, qd = traj.q[j], traj.qd[j]
    k = np.concatenate(
        [np.full(p.num_rows, k3 if p.name in ("O3", "A3") else PG_STIFF) for p in model.pairs]
    )
    T, lam = compliance_friction_reference(model, q, qd, k)
    np.testing.assert_allclose(fr.force[j], T, rtol=ALG_TOL, atol=0)
    np.testing.assert_allclose(fr.lam[j], lam, rtol=0, atol=ALG_TOL * np.max(np.abs(lam)))
    assert np.min(np.abs(T)) > 1e-3


def test_parallelogram_friction_needs_compliance(para_runs):
    """With method="min_norm" (one of infinitely many sharings) the friction is refused,
    naming the first pin whose reaction is not unique, its friction element and the remedy:
    eagerly (mb.friction_forces) and inside jax.jit (mb.accelerations, whose default method is
    the minimum-norm one)."""
    model, runs, _ = para_runs
    traj, _ = runs[PG_CRANK3[0]]
    q, qd = traj.q[5], traj.qd[5]
    message = (
        r"the reactions of pair 'O1', which carries the friction element 'fO1', are not "
        r"unique .* Pass method=mb.Compliance\(stiffness, default\)"
    )
    with pytest.raises(Exception, match="friction_forces: " + message):
        mb.friction_forces(model, q, qd, method="min_norm")
    with pytest.raises(Exception, match="accelerations: " + message):
        jax.block_until_ready(jax.jit(lambda q, qd: mb.accelerations(model, q, qd))(q, qd))


# ------------------------------------------------------------------------------------------
# bad specifications
# ------------------------------------------------------------------------------------------
def test_bad_friction_parameters():
    """Each defect is refused when the element is made, naming the element and the field:
    negative mu; zero or negative radius, length, velocity scale; non-finite, non-scalar or
    text values; a pair that is not a name. (The reference is the defect itself.)"""

    def pin(**kw):
        return mb.RevoluteFriction("fO", "O", **({"mu": 0.2, "radius": 0.01} | kw))

    def guide(**kw):
        return mb.TranslationalFriction("fP", "P", **({"mu": 0.2, "length": 0.1} | kw))

    cases = [
        (lambda: pin(mu=-0.1), "RevoluteFriction 'fO': mu = -0.1 must be non-negative"),
        (lambda: pin(radius=0.0), "RevoluteFriction 'fO': radius = 0.0 must be positive"),
        (lambda: pin(radius=-0.01), "RevoluteFriction 'fO': radius = -0.01 must be positive"),
        (
            lambda: pin(velocity_scale=0.0),
            "RevoluteFriction 'fO': velocity_scale = 0.0 must be positive",
        ),
        (lambda: guide(mu=-1.0), "TranslationalFriction 'fP': mu = -1.0 must be non-negative"),
        (lambda: guide(length=0.0), "TranslationalFriction 'fP': length = 0.0 must be positive"),
        (
            lambda: guide(velocity_scale=-1e-3),
            "TranslationalFriction 'fP': velocity_scale = -0.001 must be positive",
        ),
        (lambda: pin(mu=np.inf), "RevoluteFriction 'fO': mu = inf is not finite"),
        (
            lambda: pin(radius=(0.01, 0.02)),
            r"RevoluteFriction 'fO': radius must be a scalar, got shape \(2,\)",
        ),
        (lambda: pin(mu="0.2"), "RevoluteFriction 'fO': mu must be a number"),
        (
            lambda: mb.RevoluteFriction("fO", 3, mu=0.2, radius=0.01),
            "RevoluteFriction 'fO': pair must be the name of a Revolute pair, got 3",
        ),
    ]
    for make, message in cases:
        with pytest.raises(ValueError, match=message):
            make()


def _two_link():
    """Ground -O- link -B- block, the block also on a guide (P) and held at a distance (D)."""
    m = mb.Mechanism()
    link = m.body("link", mass=1.0, inertia=0.1, q=(0.5, 0.0, 0.0))
    blk = m.body("block", mass=1.0, inertia=0.1, q=(1.0, 0.0, 0.0))
    m.add(mb.Revolute("O", m.ground, link, s_i=(0.0, 0.0), s_j=(-0.5, 0.0)))
    m.add(mb.Revolute("B", link, blk, s_i=(0.5, 0.0), s_j=(0.0, 0.0)))
    m.add(mb.Translational("P", blk, m.ground, s_i=(0.0, 0.0), s_j=(0.0, 0.0), v=(0.0, 1.0)))
    m.add(mb.Distance("D", m.ground, blk, s_i=(0.0, 1.0), s_j=(0.0, 0.0), length=np.sqrt(2.0)))
    return m


def test_friction_on_wrong_or_missing_pair():
    """When the model is built: friction naming a pair that cannot carry it (a
    RevoluteFriction on a Translational, a TranslationalFriction on a Revolute, either on a
    Distance), an unknown pair (with the closest name), and two friction elements on one pair;
    each message names the element, the pair and the problem."""
    cases = [
        (
            mb.RevoluteFriction("fP", "P", mu=0.2, radius=0.01),
            r"RevoluteFriction 'fP': pair 'P' is a Translational, which cannot carry a "
            r"RevoluteFriction: it needs a Revolute pair; for a Translational use "
            r"TranslationalFriction",
        ),
        (
            mb.TranslationalFriction("fO", "O", mu=0.2, length=0.1),
            r"TranslationalFriction 'fO': pair 'O' is a Revolute, which cannot carry a "
            r"TranslationalFriction: it needs a Translational pair; for a Revolute use "
            r"RevoluteFriction",
        ),
        (
            mb.RevoluteFriction("fD", "D", mu=0.2, radius=0.01),
            r"RevoluteFriction 'fD': pair 'D' is a Distance, which cannot carry a "
            r"RevoluteFriction: it needs a Revolute pair \(friction is modelled in revolute and "
            r"translational pairs only\)",
        ),
        (
            mb.TranslationalFriction("fD", "D", mu=0.2, length=0.1),
            r"TranslationalFriction 'fD': pair 'D' is a Distance, which cannot carry",
        ),
        (
            mb.RevoluteFriction("fQ", "Q", mu=0.2, radius=0.01),
            r"RevoluteFriction 'fQ': refers to pair 'Q', which the model does not have; its pairs "
            r"are \['O', 'B', 'P', 'D'\]",
        ),
        (
            mb.RevoluteFriction("fO", "O1", mu=0.2, radius=0.01),
            r"refers to pair 'O1', which the model does not have \(did you mean 'O'\?\)",
        ),
    ]
    for element, message in cases:
        m = _two_link()
        m.add(element)
        with pytest.raises(ValueError, match=message):
            m.build()
    m = _two_link()
    m.add(mb.RevoluteFriction("f1", "O", mu=0.2, radius=0.01))
    m.add(mb.RevoluteFriction("f2", "O", mu=0.1, radius=0.02))
    with pytest.raises(
        ValueError,
        match=r"RevoluteFriction 'f2': pair 'O' already has the "
        r"friction element 'f1'; give a pair one friction",
    ):
        m.build()
    m = _two_link()
    m.add(mb.RevoluteFriction("fO", "O", mu=0.2, radius=0.01))
    m.add(mb.TranslationalFriction("fP", "P", mu=0.2, length=0.1))
    assert [f.name for f in m.build().friction] == ["fO", "fP"]  # control: builds


@eqx.filter_jit
def _pin_friction(mu, radius, vs):
    """A rod pinned at O with pin friction built from traced numbers: the friction torque at a
    state turning at 1 rad/s."""
    m = mb.Mechanism()
    rod = m.body("rod", mass=1.0, inertia=0.1, q=(0.0, -0.5, 0.0))
    m.add(mb.Revolute("O", m.ground, rod, s_i=(0.0, 0.0), s_j=(0.0, 0.5)))
    m.add(mb.RevoluteFriction("fO", "O", mu=mu, radius=radius, velocity_scale=vs))
    m.add(mb.Gravity((0.0, -G)))
    model = m.build()
    return mb.friction_forces(model, model.q0, jnp.array([0.5, 0.0, 1.0])).force[0]


def test_traced_friction_parameters_inside_jit():
    """Built inside jit, the friction's numbers are traced; a negative mu, or a zero radius or
    velocity scale (tanh(r s_dot / 0): nan at rest), is refused when the program runs, naming
    the element and the field (one compiled program). Control: mu r |F| tanh(r omega / v_s)
    with the pin force |F| = m sqrt((g + a omega^2)^2 + (a alpha)^2), the rod's centre a = 0.5
    below the pin (found from J_O alpha = -T, J_O = J + m a^2: a fixed point by iteration)."""
    mu, r, vs, a, m, J = 0.2, 0.01, 1e-3, 0.5, 1.0, 0.1
    T = 0.0
    for _ in range(20):
        alpha = -T / (J + m * a**2)
        T = mu * r * m * np.hypot(G + a * 1.0**2, a * alpha) * np.tanh(r * 1.0 / vs)
    assert float(_pin_friction(jnp.asarray(mu), jnp.asarray(r), jnp.asarray(vs))) == pytest.approx(
        T, rel=ALG_TOL
    )
    for args, message in (
        ((-0.2, r, vs), "mu must be non-negative"),
        ((mu, 0.0, vs), "radius must be positive"),
        ((mu, r, 0.0), "velocity_scale must be positive"),
    ):
        with pytest.raises(
            Exception,
            match=f"RevoluteFriction 'fO': {message} "
            r"\(traced value\)",
        ):
            _pin_friction(*(jnp.asarray(x) for x in args))
