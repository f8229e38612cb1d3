"""Hand-derived constraint rows and generalized forces of every jaxmb element type, in numpy.

Each pair function returns (Phi, C, b, gamma) of its rows at the stacked state (q, qd, t), with
C qd + b = d/dt Phi and C qdd = gamma (seed 001, eq. 1-9); a Pfaffian (knife-edge) row has
Phi = 0 by convention. Bodies are indices into q, `planar.GROUND` (None) for the ground.
Notation (body k): r_k, phi_k, A_k = A(phi_k), B_k = Omega A_k, so dA_k/dt = phid_k B_k; a body
point is P_k = r_k + A_k s_k. Drive functions are given as f(t) -> (value, rate, acceleration).

Sources: seed 001 eq. 40, 42, 43, 30 and its Appendix (revolute, translational, translational
driver, knife edge); seed 003 (rev-rev distance, parallel vectors, pin-in-slot, relative angle
driver, gear, gear on a rotating link, virtual work of a point force); the others derived in the
docstrings. These are the oracle of tests/test_elements.py and of the numpy reference models.
"""

import numpy as np

from .planar import GROUND, I2, OMEGA, cross, pose, put, rot, unit


def _rows(q, count):
    return np.zeros((count, len(q)))


# ----- joints -------------------------------------------------------------------------------
def revolute(q, qd, i, s_i, j, s_j):
    """Phi = r_i + A_i s_i - r_j - A_j s_j (seed 001, eq. 40); C = [I, B_i s_i | -I, -B_j s_j];
    gamma = A_i s_i phid_i^2 - A_j s_j phid_j^2 (seed 001 Appendix)."""
    (r_i, p_i), (r_j, p_j) = pose(q, i), pose(q, j)
    (_, w_i), (_, w_j) = pose(qd, i), pose(qd, j)
    a_i, a_j = rot(p_i) @ s_i, rot(p_j) @ s_j
    C = _rows(q, 2)
    put(C, i, np.column_stack([I2, OMEGA @ a_i]))
    put(C, j, -np.column_stack([I2, OMEGA @ a_j]))
    return r_i + a_i - r_j - a_j, C, np.zeros(2), a_i * w_i**2 - a_j * w_j**2


def weld(q, qd, i, s_i, j, s_j, angle=0.0):
    """Revolute rows (seed 001 eq. 40) plus phi_j - phi_i - angle: C row [0 0 -1 | 0 0 1],
    gamma 0."""
    phi, C, b, gamma = revolute(q, qd, i, s_i, j, s_j)
    row = _rows(q, 1)
    put(row, i, np.array([[0.0, 0.0, -1.0]]))
    put(row, j, np.array([[0.0, 0.0, 1.0]]))
    return (
        np.append(phi, pose(q, j)[1] - pose(q, i)[1] - angle),
        np.vstack([C, row]),
        np.zeros(3),
        np.append(gamma, 0.0),
    )


def sliding(q, qd, i, s_i, j, s_j, w_local):
    """The row (r_j + A_j s_j - r_i - A_i s_i)^T A_j w of seed 001 eq. 42-43 (w_local a unit
    body-j vector): (Phi, C, gamma) with
    C: body i [-w^T, -w^T Omega A_i s_i], body j [w^T, -w^T Omega (r_j - r_i - A_i s_i)];
    gamma = w^T (2 Omega (rd_j - rd_i) phid_j + (r_j - r_i) phid_j^2 - A_i s_i (phid_j -
    phid_i)^2) (seed 001 Appendix, rederived for A = [[c, -s], [s, c]]), w = A_j w_local."""
    (r_i, p_i), (r_j, p_j) = pose(q, i), pose(q, j)
    (v_i, w_i), (v_j, w_j) = pose(qd, i), pose(qd, j)
    a_i, a_j, w = rot(p_i) @ s_i, rot(p_j) @ s_j, rot(p_j) @ w_local
    C = _rows(q, 1)
    put(C, i, np.append(-w, -w @ OMEGA @ a_i)[None])
    put(C, j, np.append(w, -w @ OMEGA @ (r_j - r_i - a_i))[None])
    gamma = w @ (2 * OMEGA @ (v_j - v_i) * w_j + (r_j - r_i) * w_j**2 - a_i * (w_j - w_i) ** 2)
    return (r_j + a_j - r_i - a_i) @ w, C, gamma


def translational(q, qd, i, s_i, j, s_j, v, angle=0.0):
    """Seed 001 eq. 42 with v normalised: [d^T A_j v; phi_i - phi_j - angle]; the second row
    has C = [0 0 1 | 0 0 -1] and gamma 0."""
    phi1, C1, g1 = sliding(q, qd, i, s_i, j, s_j, unit(v))
    C2 = _rows(q, 1)
    put(C2, i, np.array([[0.0, 0.0, 1.0]]))
    put(C2, j, np.array([[0.0, 0.0, -1.0]]))
    phi2 = pose(q, i)[1] - pose(q, j)[1] - angle
    return np.array([phi1, phi2]), np.vstack([C1, C2]), np.zeros(2), np.array([g1, 0.0])


def distance(q, qd, i, s_i, j, s_j, length):
    """Seed 003 rev-rev: Phi = d^T d - L^2, d = P_j - P_i; C = 2 d^T [-I, -B_i s_i | I,
    B_j s_j]; Phi'' = 2 dd^T dd + 2 d^T d'' with d'' = (C part) - A_j s_j phid_j^2 +
    A_i s_i phid_i^2, so gamma = -2 dd^T dd - 2 d^T (A_i s_i phid_i^2 - A_j s_j phid_j^2)."""
    (r_i, p_i), (r_j, p_j) = pose(q, i), pose(q, j)
    (v_i, w_i), (v_j, w_j) = pose(qd, i), pose(qd, j)
    a_i, a_j = rot(p_i) @ s_i, rot(p_j) @ s_j
    d = r_j + a_j - r_i - a_i
    dd = v_j + OMEGA @ a_j * w_j - v_i - OMEGA @ a_i * w_i
    C = _rows(q, 1)
    put(C, i, 2 * d @ -np.column_stack([I2, OMEGA @ a_i]))
    put(C, j, 2 * d @ np.column_stack([I2, OMEGA @ a_j]))
    gamma = -2 * dd @ dd - 2 * d @ (a_i * w_i**2 - a_j * w_j**2)
    return np.array([d @ d - length**2]), C, np.zeros(1), np.array([gamma])


def parallel(q, qd, i, a_i, j, a_j):
    """Seed 003 parallel-1: Phi = (A_i a_i) x (A_j a_j) = |a_i||a_j| sin(theta), theta the
    angle between them, so C = [0 0 -p.r | 0 0 p.r] with p = A_i a_i, r = A_j a_j, and
    gamma = Phi (phid_j - phid_i)^2 (from Phi'' = K cos(theta) theta'' - K sin(theta)
    theta'^2)."""
    p, r = rot(pose(q, i)[1]) @ a_i, rot(pose(q, j)[1]) @ a_j
    (_, w_i), (_, w_j) = pose(qd, i), pose(qd, j)
    C = _rows(q, 1)
    put(C, i, np.array([[0.0, 0.0, -p @ r]]))
    put(C, j, np.array([[0.0, 0.0, p @ r]]))
    return np.array([cross(p, r)]), C, np.zeros(1), np.array([cross(p, r) * (w_j - w_i) ** 2])


def pin_in_slot(q, qd, i, s_i, j, s_j, a_i):
    """Seed 003 parallel-2: Phi = p x d = (Omega p)^T d, p = A_i a_i, d = P_j - P_i.
    dPhi/dr_i = -(Omega p)^T, dPhi/dphi_i = (Omega Omega p)^T d - (Omega p)^T B_i s_i
    = -p^T (r_j + A_j s_j - r_i); dPhi/dr_j = (Omega p)^T, dPhi/dphi_j = p^T A_j s_j.
    Phi'' = (Omega p'')^T d + 2 (Omega p')^T dd + (Omega p)^T d'' with p' = phid_i Omega p,
    p'' = phidd_i Omega p - phid_i^2 p, hence gamma = phid_i^2 (p x d) + 2 phid_i p^T dd -
    (Omega p)^T (A_i s_i phid_i^2 - A_j s_j phid_j^2)."""
    (r_i, p_i), (r_j, p_j) = pose(q, i), pose(q, j)
    (v_i, w_i), (v_j, w_j) = pose(qd, i), pose(qd, j)
    c_i, c_j, p = rot(p_i) @ s_i, rot(p_j) @ s_j, rot(p_i) @ a_i
    d = r_j + c_j - r_i - c_i
    dd = v_j + OMEGA @ c_j * w_j - v_i - OMEGA @ c_i * w_i
    C = _rows(q, 1)
    put(C, i, np.append(-OMEGA @ p, -p @ (r_j + c_j - r_i))[None])
    put(C, j, np.append(OMEGA @ p, p @ c_j)[None])
    quad = c_i * w_i**2 - c_j * w_j**2
    gamma = w_i**2 * cross(p, d) + 2 * w_i * p @ dd - (OMEGA @ p) @ quad
    return np.array([cross(p, d)]), C, np.zeros(1), np.array([gamma])


def _angle_row(q, coefficients):
    """Row with coefficient c on phi_k for each (k, c)."""
    row = _rows(q, 1)
    for k, c in coefficients:
        put(row, k, np.array([[0.0, 0.0, c]]))
    return row


def gear(q, qd, i, j, ratio, offset=0.0):
    """Seed 003 gear pair: phi_j - K phi_i - offset; C row [0 0 -K | 0 0 1]; gamma = 0."""
    phi = pose(q, j)[1] - ratio * pose(q, i)[1] - offset
    return np.array([phi]), _angle_row(q, [(i, -ratio), (j, 1.0)]), np.zeros(1), np.zeros(1)


def gear_on_link(q, qd, i, j, k, ratio, offset=0.0):
    """Seed 003 gear pair on a rotating link k: (phi_j - phi_k) - K (phi_i - phi_k) - offset;
    C row: -K on phi_i, 1 on phi_j, K - 1 on phi_k; gamma = 0."""
    p_i, p_j, p_k = pose(q, i)[1], pose(q, j)[1], pose(q, k)[1]
    phi = (p_j - p_k) - ratio * (p_i - p_k) - offset
    C = _angle_row(q, [(i, -ratio), (j, 1.0), (k, ratio - 1.0)])
    return np.array([phi]), C, np.zeros(1), np.zeros(1)


# ----- drivers (rheonomic: b = -f'(t), gamma gains f''(t)) ----------------------------------
def translational_driver(q, qd, t, i, s_i, j, s_j, u, f):
    """Seed 001 eq. 43: the sliding row along unit u minus d(t); b = -d'(t), gamma += d''(t)."""
    phi, C, gamma = sliding(q, qd, i, s_i, j, s_j, unit(u))
    value, rate, acceleration = f(t)
    return np.array([phi - value]), C, np.array([-rate]), np.array([gamma + acceleration])


def relative_angle_driver(q, qd, t, i, j, f, offset=0.0):
    """Seed 003 relative angle driver: phi_j - phi_i - offset - f(t); C row [0 0 -1 | 0 0 1];
    b = -f'(t); gamma = f''(t)."""
    value, rate, acceleration = f(t)
    phi = pose(q, j)[1] - pose(q, i)[1] - offset - value
    C = _angle_row(q, [(i, -1.0), (j, 1.0)])
    return np.array([phi]), C, np.array([-rate]), np.array([acceleration])


def absolute_driver(q, qd, t, k, coordinate, f):
    """q[3k + coordinate] - f(t): C is the unit row e_(3k + coordinate); b = -f'(t);
    gamma = f''(t)."""
    value, rate, acceleration = f(t)
    C = _rows(q, 1)
    C[0, 3 * k + coordinate] = 1.0
    return np.array([q[3 * k + coordinate] - value]), C, np.array([-rate]), np.array([acceleration])


# ----- nonholonomic ----------------------------------------------------------------------------
def knife_edge(q, qd, k, s, n):
    """Seed 001 eq. 30: Psi qd = (A n)^T (rd + phid Omega A s) = 0, n normalised; C row
    [(A n)^T, (A n)^T Omega A s]. d/dt of Psi qd with qdd = 0 is phid (Omega A n)^T (rd + phid
    Omega A s) - phid^2 (A n)^T A s = phid (Omega A n)^T rd (the phid^2 terms cancel, Omega^T
    Omega = I), so gamma = -phid (Omega A n)^T rd (seed 001, after eq. 30). Phi = 0."""
    _, p = pose(q, k)
    v, w = pose(qd, k)
    n_global = rot(p) @ unit(n)
    C = _rows(q, 1)
    put(C, k, np.append(n_global, n_global @ OMEGA @ rot(p) @ s)[None])
    return np.zeros(1), C, np.zeros(1), np.array([-w * (OMEGA @ n_global) @ v])


def stack(pairs):
    """(Phi, C, b, gamma) of all rows from [(name, (Phi, C, b, gamma)), ...] in order."""
    parts = [p for _, p in pairs]
    return tuple(
        np.concatenate([np.atleast_1d(p[k]) for p in parts])
        if k != 1
        else np.vstack([p[1] for p in parts])
        for k in range(4)
    )


def pair_rows(pairs):
    """[(name, slice of rows of C)] in row order."""
    out, start = [], 0
    for name, p in pairs:
        out.append((name, slice(start, start + len(p[3]))))
        start += len(p[3])
    return out


# ----- force elements: generalized forces Q with Q^T delta q the virtual work -------------------
def point_force(q, k, s, f):
    """Global force f at body point s: delta r_P = delta r + delta phi Omega A s, so
    Q_k = [f, (Omega A s)^T f] (seed 003, virtual work of a force at a point)."""
    Q = np.zeros(len(q))
    if k is not GROUND:
        Q[3 * k : 3 * k + 3] = np.append(f, (OMEGA @ rot(pose(q, k)[1]) @ s) @ f)
    return Q


def torque(q, k, tau):
    """Counter-clockwise torque tau on body k: Q = tau on phi_k."""
    Q = np.zeros(len(q))
    if k is not GROUND:
        Q[3 * k + 2] = tau
    return Q


def gravity(masses, g):
    """Uniform gravity: Q_k = (m_k g, 0) per body."""
    return np.concatenate([[m * g[0], m * g[1], 0.0] for m in masses])


def spring_damper(q, qd, i, s_i, j, s_j, stiffness, damping, free_length):
    """d = P_j - P_i, l = |d|, e = d / l, ldot = e^T (v_Pj - v_Pi); tension T = k (l - l0) +
    c ldot (positive when stretched) pulls the points together: T e on P_i, -T e on P_j."""
    (r_i, p_i), (r_j, p_j) = pose(q, i), pose(q, j)
    (v_i, w_i), (v_j, w_j) = pose(qd, i), pose(qd, j)
    a_i, a_j = rot(p_i) @ s_i, rot(p_j) @ s_j
    d = r_j + a_j - r_i - a_i
    length = np.linalg.norm(d)
    e = d / length
    rate = e @ (v_j + w_j * OMEGA @ a_j - v_i - w_i * OMEGA @ a_i)
    tension = stiffness * (length - free_length) + damping * rate
    return point_force(q, i, s_i, tension * e) + point_force(q, j, s_j, -tension * e)


def rotational_spring_damper(q, qd, i, j, stiffness, damping, free_angle=0.0):
    """theta = phi_j - phi_i, tau = k (theta - theta0) + c thetad; +tau on i, -tau on j
    (Q = -tau dtheta/dq)."""
    theta = pose(q, j)[1] - pose(q, i)[1]
    rate = pose(qd, j)[1] - pose(qd, i)[1]
    tau = stiffness * (theta - free_angle) + damping * rate
    return torque(q, i, tau) + torque(q, j, -tau)


def bushing(q, qd, i, s_i, j, s_j, stiffness, damping, free_angle=0.0):
    """Bushing: e = [P_i - P_j; phi_j - phi_i - theta0], de/dt = [v_Pi - v_Pj; w_j - w_i],
    lambda = K e + D de/dt (elementwise); force -lambda_xy at P_i and +lambda_xy at P_j,
    torque +lambda_phi on i and -lambda_phi on j."""
    (r_i, p_i), (r_j, p_j) = pose(q, i), pose(q, j)
    (v_i, w_i), (v_j, w_j) = pose(qd, i), pose(qd, j)
    a_i, a_j = rot(p_i) @ s_i, rot(p_j) @ s_j
    e = np.append(r_i + a_i - r_j - a_j, p_j - p_i - free_angle)
    rate = np.append(v_i + w_i * OMEGA @ a_i - v_j - w_j * OMEGA @ a_j, w_j - w_i)
    lam = np.asarray(stiffness) * e + np.asarray(damping) * rate
    return (
        point_force(q, i, s_i, -lam[:2])
        + point_force(q, j, s_j, lam[:2])
        + torque(q, i, lam[2])
        + torque(q, j, -lam[2])
    )


def mechanical_energy(masses, inertias, q, qd, g):
    """T + V = 1/2 qd^T M qd - sum_k m_k g . r_k (M = diag(m, m, J) per body, uniform gravity
    g), for one state or along a trajectory (leading axes of q and qd)."""
    m, J = np.asarray(masses, float), np.asarray(inertias, float)
    M = np.stack([m, m, J], axis=1).reshape(-1)
    q, qd = np.asarray(q, float), np.asarray(qd, float)
    r = q.reshape(*q.shape[:-1], -1, 3)[..., :2]
    return 0.5 * np.sum(M * qd**2, axis=-1) - np.einsum("k,...kd,d->...", m, r, np.asarray(g))
