"""Plain numpy/scipy reference: what a user would write instead of jaxmb (jaxmb issue #8).

The three benchmark models in absolute coordinates, with hand-coded constraint rows, the same
null-space formulation and Baumgarte stabilization as `mb.simulate`, integrated by
`scipy.integrate.solve_ivp(method="RK45")` at jaxmb's default tolerances. No jax inside: it is
both the baseline the benchmarks time (benchmarks/) and an independent oracle for jaxmb's
autodiff rows and trajectories (tests/test_reference_numpy.py).

The rows of each pair, (Phi, C, b, gamma) with C qd + b = d/dt Phi and C qdd = gamma, come from
`oracle.pairs` (seed 001, eq. 1-9, 30, 40, 42, 43), stacked pair by pair in jaxmb's order (the
builders in jaxmb/models/). Dynamics (seed 001, eq. 13):

    qdd = C^+ gamma_s + V z,   (V^T M V) z = V^T (F - M C^+ gamma_s),   C V = 0,
    gamma_s = gamma - 2 alpha (C qd + b) - beta^2 Phi,   alpha = beta = 10 1/s,

with the rank of C decided by singular values above 1e-9 times the largest (jaxmb's RANK_RTOL).
Functions: `simulate_robot`, `simulate_slider_crank`, `simulate_n_four_bar` -> (ts, q, qd, nfev);
`solvability_loop(C_batch, pair_rows)` (seed 001 section 3.3, pivoted QR per configuration).
"""

import numpy as np
from scipy.integrate import solve_ivp

from . import pairs as rows
from .linalg import B_RTOL, RANK_RTOL, qr_solvability
from .pairs import knife_edge, pair_rows, revolute, stack, translational, translational_driver
from .planar import GROUND

ALPHA = BETA = 10.0  # Baumgarte parameters of mb.simulate (1/s)
RTOL, ATOL = 1e-8, 1e-10  # mb.simulate's default tolerances


# ----- models (parameters of jaxmb/models/*.py builders with their defaults) ------------------
def gravity_forces(masses, g=(0.0, -9.81)):
    """F = (m_k g, 0) per body."""
    return rows.gravity(masses, g)


A_UNIT = 0.05
ZETA = np.arctan(0.25)
BX, BY = A_UNIT * np.sin(ZETA), A_UNIT * np.cos(ZETA)
CX = 4 * A_UNIT - BX
CY = np.sqrt((5 * A_UNIT) ** 2 - CX**2)
ROBOT_MASSES = (10.0, 1.0, 1.0, 1.0, 1.0, 1.0, 5.0)
ROBOT_INERTIAS = (0.25, 0.005, 0.005, 0.005, 0.005, 0.005, 0.05)
STEER_STARTS, STEER_ENDS = np.array([0.5, 5.0, 11.0, 15.0]), np.array([2.5, 7.0, 13.0, 17.0])
STEER_JUMPS = np.array([1.0, -1.0, -1.0, 1.0])  # differences of the levels (0,) 1, 0, -1, 0


def robot_q0(a=A_UNIT):
    """Seed 001 eq. 34 (bodies: platform, holders W1 and W2, links 4 and 5, slider, trolley)."""
    dx, dy = CX / 2, CY / 2 - BY
    return np.array(
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
        ],
        float,
    )


def robot_qd0(v0=0.1):
    """Seed 001 eq. 39: every body moves along x0 at v0."""
    return np.tile([v0, 0.0, 0.0], 7)


def steering(t, amplitude=0.02):
    """Slider distance d(t) = 20 a + sum_k amplitude jump_k S(x_k), S = 10x^3 - 15x^4 + 6x^5,
    x_k = clip((t - start_k) / (end_k - start_k), 0, 1); returns (d, d', d'')."""
    h = STEER_ENDS - STEER_STARTS
    x = np.clip((t - STEER_STARTS) / h, 0.0, 1.0)
    S = x**3 * (10 - 15 * x + 6 * x**2)
    dS = 30 * x**2 * (1 - x) ** 2 / h
    ddS = 60 * x * (1 - x) * (1 - 2 * x) / h**2
    c = amplitude * STEER_JUMPS
    return 20 * A_UNIT + c @ S, c @ dS, c @ ddS


def robot_pairs(q, qd, t, amplitude=0.02):
    """Rows of seed 001 section 4 in the paper's order: A-G, H, driver, W1-W5 (0-based bodies:
    0 platform, 1-2 holders, 3-4 links, 5 slider, 6 trolley)."""
    a = A_UNIT
    P, Q = np.array([0.0, 10 * a]), np.array([0.0, -10 * a])
    V = np.array
    return [
        ("A", revolute(q, qd, 6, V([7 * a, 0]), 0, V([-8 * a, 0]))),
        ("B", revolute(q, qd, 1, V([0.0, 0]), 0, V([4 * a, 0]))),
        ("C", revolute(q, qd, 2, V([0.0, 0]), 0, V([-4 * a, 0]))),
        ("D", revolute(q, qd, 3, V([CX / 2, -CY / 2]), 1, V([-BX, -BY]))),
        ("E", revolute(q, qd, 4, V([-CX / 2, -CY / 2]), 2, V([BX, -BY]))),
        ("F", revolute(q, qd, 5, V([0, CY - BY]), 3, V([-CX / 2, CY / 2]))),
        ("G", revolute(q, qd, 5, V([0, CY - BY]), 4, V([CX / 2, CY / 2]))),
        ("H", translational(q, qd, 5, P, 0, Q, V([1.0, 0]))),
        (
            "driver",
            translational_driver(
                q, qd, t, 5, P, 0, Q, V([0, -1.0]), lambda t: steering(t, amplitude)
            ),
        ),
        ("W1", knife_edge(q, qd, 1, V([0.0, 0]), V([0, 1.0]))),
        ("W2", knife_edge(q, qd, 2, V([0.0, 0]), V([0, 1.0]))),
        ("W3", knife_edge(q, qd, 0, V([0, -4 * a]), V([0, 1.0]))),
        ("W4", knife_edge(q, qd, 0, V([0, 4 * a]), V([0, 1.0]))),
        ("W5", knife_edge(q, qd, 6, V([0.0, 0]), V([0, 1.0]))),
    ]


SC_R, SC_L = 0.1, 0.3
SC_MASSES = (1.0, 2.0, 0.5)
SC_INERTIAS = (1.0 * SC_R**2 / 12, 2.0 * SC_L**2 / 12, 1e-3)


def slider_crank_state(theta=0.3, omega=15.0):
    """Closed-form q and qd of the slider-crank at crank angle theta and rate omega: tip
    A = r (cos, sin), slider x_B = A_x + sqrt(l^2 - A_y^2), rod angle beta = -asin(A_y / l)."""
    r, l = SC_R, SC_L
    ax, ay, axd, ayd = r * np.cos(theta), r * np.sin(theta), -r * np.sin(theta), r * np.cos(theta)
    root = np.sqrt(l**2 - ay**2)
    xb, xbd = ax + root, axd - ay * ayd / root
    beta, betad = np.arctan2(-ay, root), -ayd / root
    q = np.array([ax / 2, ay / 2, theta, (ax + xb) / 2, ay / 2, beta, xb, 0, 0])
    qd = omega * np.array([axd / 2, ayd / 2, 1, (axd + xbd) / 2, ayd / 2, betad, xbd, 0, 0])
    return q, qd


def slider_crank_pairs(q, qd, t):
    """O (ground-crank), A (crank-rod), B (rod-slider), P (slider on the ground x axis)."""
    r, l, V = SC_R, SC_L, np.array
    return [
        ("O", revolute(q, qd, GROUND, V([0.0, 0]), 0, V([-r / 2, 0]))),
        ("A", revolute(q, qd, 0, V([r / 2, 0]), 1, V([-l / 2, 0]))),
        ("B", revolute(q, qd, 1, V([l / 2, 0]), 2, V([0.0, 0]))),
        ("P", translational(q, qd, 2, V([0.0, 0]), GROUND, V([0.0, 0]), V([0.0, 1]))),
    ]


def n_four_bar_state(N, angle=np.pi / 2, rate=-1.0, L=1.0):
    """All N + 1 cranks at `angle` turning at `rate`, couplers horizontal and translating
    (IFToMM A02 start: angle pi/2, rate -1/L, so B_0 moves at 1 m/s along +x)."""
    u, du = (
        np.array([np.cos(angle), np.sin(angle)]),
        rate * np.array([-np.sin(angle), np.cos(angle)]),
    )
    q = [[k * L + L / 2 * u[0], L / 2 * u[1], angle] for k in range(N + 1)]
    q += [[(j + 0.5) * L + L * u[0], L * u[1], 0.0] for j in range(N)]
    qd = [[L / 2 * du[0], L / 2 * du[1], rate]] * (N + 1) + [[L * du[0], L * du[1], 0.0]] * N
    return np.array(q, float).ravel(), np.array(qd, float).ravel()


def n_four_bar_pairs(q, qd, t, N, L=1.0):
    """Revolutes A0..AN (ground - crank k), then per coupler j: B{j}c{j}, B{j+1}c{j}
    (bodies: cranks 0..N, couplers N+1..2N)."""
    tip, foot = np.array([L / 2, 0.0]), np.array([-L / 2, 0.0])
    pairs = [
        (f"A{k}", revolute(q, qd, GROUND, np.array([k * L, 0.0]), k, foot)) for k in range(N + 1)
    ]
    for j in range(N):
        pairs.append((f"B{j}c{j}", revolute(q, qd, j, tip, N + 1 + j, foot)))
        pairs.append((f"B{j + 1}c{j}", revolute(q, qd, j + 1, tip, N + 1 + j, tip)))
    return pairs


# ----- dynamics and integration ---------------------------------------------------------------
def accelerations(M, F, C, gamma, rtol=RANK_RTOL):
    """Null-space formulation (seed 001, eq. 13); unique qdd for a rank-deficient C."""
    U, s, Vt = np.linalg.svd(C)
    rank = int(np.sum(s > rtol * s[0]))
    V = Vt[rank:].T  # orthonormal basis of null(C)
    qp = np.linalg.lstsq(C, gamma, rcond=rtol)[0]  # minimum-norm C^+ gamma
    z = np.linalg.solve(V.T @ M @ V, V.T @ (F - M @ qp))
    return qp + V @ z


def simulate(
    pairs, masses, inertias, F, q0, qd0, t1, ts=None, rtol=RTOL, atol=ATOL, alpha=ALPHA, beta=BETA
):
    """Integrate with RK45; `pairs(q, qd, t)` gives the rows, F the constant applied forces.
    Returns (ts, q, qd, nfev)."""
    n = len(q0)
    M = np.diag(np.column_stack([masses, masses, inertias]).ravel())
    ts = np.linspace(0.0, t1, 201) if ts is None else np.asarray(ts, float)

    def rhs(t, y):
        q, qd = y[:n], y[n:]
        phi, C, b, gamma = stack(pairs(q, qd, t))
        gamma_s = gamma - 2 * alpha * (C @ qd + b) - beta**2 * phi  # Baumgarte
        return np.concatenate([qd, accelerations(M, F, C, gamma_s)])

    sol = solve_ivp(
        rhs, (0.0, t1), np.concatenate([q0, qd0]), method="RK45", t_eval=ts, rtol=rtol, atol=atol
    )
    if not sol.success:
        raise RuntimeError(f"solve_ivp failed: {sol.message}")
    return sol.t, sol.y[:n].T, sol.y[n:].T, sol.nfev


def simulate_robot(t1=20.0, ts=None, *, amplitude=0.02, v0=0.1, **kw):
    """Seed 001 section 4.3: the robot's manoeuvre from eq. 34 and 39 (no applied forces)."""
    return simulate(
        lambda q, qd, t: robot_pairs(q, qd, t, amplitude),
        ROBOT_MASSES,
        ROBOT_INERTIAS,
        np.zeros(21),
        robot_q0(),
        robot_qd0(v0),
        t1,
        ts,
        **kw,
    )


def simulate_slider_crank(t1=1.0, ts=None, *, theta0=0.3, omega0=15.0, **kw):
    """Free slider-crank under gravity, crank starting at theta0 with rate omega0 (it revolves)."""
    q0, qd0 = slider_crank_state(theta0, omega0)
    return simulate(
        slider_crank_pairs, SC_MASSES, SC_INERTIAS, gravity_forces(SC_MASSES), q0, qd0, t1, ts, **kw
    )


def simulate_n_four_bar(N, t1=1.0, ts=None, **kw):
    """IFToMM A02 N-four-bar (unit bars, 1 kg, gravity) from the benchmark's start."""
    q0, qd0 = n_four_bar_state(N)
    masses = np.ones(2 * N + 1)
    return simulate(
        lambda q, qd, t: n_four_bar_pairs(q, qd, t, N),
        masses,
        masses / 12,
        gravity_forces(masses),
        q0,
        qd0,
        t1,
        ts,
        **kw,
    )


# ----- solvability (seed 001, section 3.3) ----------------------------------------------------
def solvability_loop(C_batch, pair_rows, rtol=RANK_RTOL, btol=B_RTOL):
    """Pivoted QR C E = Q R per configuration (eq. 21); rank r = number of |R_kk| above
    rtol max |R_kk|; Q~ = the last m + h - r columns of Q (a basis of null(C^T));
    B_X = C_X^T Q~_X (eq. 27) per pair, solvable iff |B_X|_F <= btol |C_X|_F
    (`oracle.linalg.qr_solvability`).

    `pair_rows`: [(name, slice of rows)]. Returns (rank (K,), solvable (K, pairs),
    b_norm (K, pairs))."""
    K, P = len(C_batch), len(pair_rows)
    ranks, solvable, b_norm = np.empty(K, int), np.empty((K, P), bool), np.empty((K, P))
    for k, C in enumerate(C_batch):
        ranks[k], _, b_norm[k], solvable[k] = qr_solvability(
            C, [r for _, r in pair_rows], rtol, btol
        )
    return ranks, solvable, b_norm


def robot_C(q, t=0.0, amplitude=0.02):
    """C(q, t) of the robot (22 x 21)."""
    return stack(robot_pairs(q, np.zeros_like(q), t, amplitude))[1]


def robot_solvability(qs, ts):
    """`solvability_loop` on the robot's hand-coded C at configurations qs (K, 21), times ts."""
    C_batch = np.stack([robot_C(q, t) for q, t in zip(qs, ts)])
    rows = pair_rows(robot_pairs(qs[0], np.zeros(21), ts[0]))
    return solvability_loop(C_batch, rows)
