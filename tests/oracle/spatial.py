"""Hand-derived rows of the spatial elements in numpy (no jax), the oracle of
tests/test_spatial_elements.py.

Conventions (API.md, "Spatial mechanisms (3D)"; the spatial note, section 2): q stacks
(x, y, z, w, qx, qy, qz) per body, p = (p0, e) a quaternion of any non-zero length, A = A(p/|p|)
maps body-frame vectors to the global frame; the velocity coordinates are v = (rdot global,
omega' body frame) per body and qdot = T(q) v with pdot = 1/2 p (x) (0, omega'). The ground
(body None) has no coordinates and the identity pose.

Every Jacobian here is with respect to v (6 columns per body), derived by hand from
d(A a)/dt = A (omega' x a) = -A a~ omega' (Nikravesh, "Computer-Aided Analysis of Mechanical
Systems", ch. 6-7; Haug, "Computer-Aided Kinematics and Dynamics of Mechanical Systems",
the dot-1 and dot-2 constraints):

- a body point P = r + A s: dP/dv = [I, -A s~];
- a body direction A a: [0, -A a~];
- d_ij = P_j - P_i: [-I, A_i s_i~ | I, -A_j s_j~];
- dot-1(a_i, b_j) = a . b (a = A_i a_i, b = A_j b_j): [0, -b^T A_i a_i~ | 0, -a^T A_j b_j~];
- dot-2(a_i, d) = a . d: a^T (dd/dv) + d^T [0, -A_i a_i~] on body i.

Drive functions are given as f(t) -> (value, rate, acceleration). A holonomic row returns
(Phi, C, b) with C v + b = dPhi/dt; a Pfaffian row (C, b) with g = C v + b.
"""

import numpy as np

GROUND = None
NQ, NV = 7, 6


# ----- quaternions, rotations -------------------------------------------------------------
def qmul(p, q):
    """Hamilton product."""
    p0, e, q0, f = p[0], np.asarray(p[1:]), q[0], np.asarray(q[1:])
    return np.concatenate([[p0 * q0 - e @ f], p0 * f + q0 * e + np.cross(e, f)])


def tilde(a):
    """The cross-product matrix: tilde(a) b = a x b."""
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def rot(p):
    """A(p / |p|) = (p0^2 - e.e) I + 2 e e^T + 2 p0 e~ for the unit quaternion."""
    p = np.asarray(p, float) / np.linalg.norm(p)
    p0, e = p[0], p[1:]
    return (p0 * p0 - e @ e) * np.eye(3) + 2.0 * np.outer(e, e) + 2.0 * p0 * tilde(e)


def qexp(theta):
    """Unit quaternion of the rotation vector theta."""
    angle = np.linalg.norm(theta)
    if angle == 0.0:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return np.concatenate([[np.cos(angle / 2)], np.sin(angle / 2) * np.asarray(theta) / angle])


def quat_of(A):
    """A unit quaternion of the rotation matrix A (Rodrigues' axis and angle, numpy; valid
    away from a half turn, where the tests never call it)."""
    angle = np.arccos(np.clip((np.trace(A) - 1.0) / 2.0, -1.0, 1.0))
    axis = np.array([A[2, 1] - A[1, 2], A[0, 2] - A[2, 0], A[1, 0] - A[0, 1]])
    if angle < 1e-12:
        return np.array([1.0, 0.0, 0.0, 0.0])
    return qexp(angle * axis / np.linalg.norm(axis))


def T_body(p):
    """The 7 x 6 block of T(q): identity on r, pdot = 1/2 p (x) (0, omega') =
    1/2 [-e^T; p0 I + e~] omega'."""
    p = np.asarray(p, float)
    block = np.zeros((NQ, NV))
    block[:3, :3] = np.eye(3)
    block[3, 3:] = -0.5 * p[1:]
    block[4:, 3:] = 0.5 * (p[0] * np.eye(3) + tilde(p[1:]))
    return block


def T(q):
    """T(q), block diagonal, (7 b) x (6 b)."""
    b = len(q) // NQ
    out = np.zeros((NQ * b, NV * b))
    for k in range(b):
        out[NQ * k : NQ * k + NQ, NV * k : NV * k + NV] = T_body(q[NQ * k + 3 : NQ * k + NQ])
    return out


def axis_frame(axis):
    """(f, g, h) of an axis, Duff et al. (JCGT 6(1), 2017), the library's documented choice."""
    h = np.asarray(axis, float) / np.linalg.norm(axis)
    sigma = -1.0 if h[2] < 0.0 else 1.0
    a = -1.0 / (sigma + h[2])
    b = h[0] * h[1] * a
    f = np.array([1.0 + sigma * h[0] ** 2 * a, sigma * b, -sigma * h[0]])
    g = np.array([b, sigma + h[1] ** 2 * a, -h[1]])
    return f, g, h


def unit(a):
    return np.asarray(a, float) / np.linalg.norm(a)


# ----- states --------------------------------------------------------------------------------
def pose(q, k):
    """(r, A) of body k; ground: (0, I)."""
    if k is GROUND:
        return np.zeros(3), np.eye(3)
    x = np.asarray(q[NQ * k : NQ * k + NQ], float)
    return x[:3], rot(x[3:])


def velocity(v, k):
    """(rdot, omega') of body k; ground: zeros."""
    if k is GROUND:
        return np.zeros(3), np.zeros(3)
    return np.asarray(v[NV * k : NV * k + 3]), np.asarray(v[NV * k + 3 : NV * k + NV])


def put(rows, k, block):
    """Add a (rows, 6) block into the columns of body k (nothing for the ground)."""
    if k is not GROUND:
        rows[:, NV * k : NV * k + NV] += block


def motion(q, v, a, tau):
    """q(tau): r + tau rdot + tau^2 / 2 rddot, p (x) exp(tau omega' + tau^2 / 2 alpha') (|p|
    kept), whose velocity coordinates are v + tau a to second order, even in tau (a central
    difference of it is exact to O(tau^2))."""
    q = np.array(q, float)
    for k in range(len(q) // NQ):
        rd, w = velocity(v, k)
        rdd, alpha = velocity(a, k)
        q[NQ * k : NQ * k + 3] += tau * rd + 0.5 * tau**2 * rdd
        p = q[NQ * k + 3 : NQ * k + NQ]
        q[NQ * k + 3 : NQ * k + NQ] = qmul(p, qexp(tau * w + 0.5 * tau**2 * alpha))
    return q


def qddot(q, v, a):
    """d/dtau of T(q(tau)) v(tau) at 0 along `motion`: (rddot, 1/2 pdot (x) (0, omega') +
    1/2 p (x) (0, alpha'))."""
    out = []
    for k in range(len(q) // NQ):
        rdd, alpha = velocity(a, k)
        _, w = velocity(v, k)
        p = np.asarray(q[NQ * k + 3 : NQ * k + NQ], float)
        pdot = 0.5 * qmul(p, np.concatenate([[0.0], w]))
        pdd = 0.5 * qmul(pdot, np.concatenate([[0.0], w])) + 0.5 * qmul(
            p, np.concatenate([[0.0], alpha])
        )
        out.append(np.concatenate([rdd, pdd]))
    return np.concatenate(out)


# ----- basic constraints: value and v-Jacobian rows ---------------------------------------
def _ncols(q):
    return NV * (len(q) // NQ)


def point(q, k, s):
    """P = r + A s and dP/dv = [I, -A s~]."""
    r, A = pose(q, k)
    J = np.zeros((3, _ncols(q)))
    put(J, k, np.hstack([np.eye(3), -A @ tilde(s)]))
    return r + A @ s, J


def direction(q, k, a):
    """A a and its v-Jacobian [0, -A a~]."""
    _, A = pose(q, k)
    J = np.zeros((3, _ncols(q)))
    put(J, k, np.hstack([np.zeros((3, 3)), -A @ tilde(a)]))
    return A @ a, J


def separation(q, i, s_i, j, s_j):
    """d_ij = P_j - P_i and [-I, A_i s_i~ | I, -A_j s_j~]."""
    P_i, J_i = point(q, i, s_i)
    P_j, J_j = point(q, j, s_j)
    return P_j - P_i, J_j - J_i


def dot1(q, i, a_i, j, b_j):
    """a . b and [0, -b^T A_i a_i~ | 0, -a^T A_j b_j~]."""
    a, Ja = direction(q, i, a_i)
    b, Jb = direction(q, j, b_j)
    return a @ b, b @ Ja + a @ Jb


def dot2(q, i, a_i, d, D):
    """a . d and a^T D + d^T [0, -A_i a_i~]."""
    a, Ja = direction(q, i, a_i)
    return a @ d, a @ D + d @ Ja


def _stack(rows):
    return np.array([r[0] for r in rows]), np.vstack([r[1] for r in rows])


# ----- joints: (Phi, C) ----------------------------------------------------------------------
def spherical(q, i, s_i, j, s_j):
    return separation(q, i, s_i, j, s_j)


def revolute(q, i, s_i, axis_i, j, s_j, axis_j):
    f_i, g_i, _ = axis_frame(axis_i)
    h_j = unit(axis_j)
    d, D = separation(q, i, s_i, j, s_j)
    phi, C = _stack([dot1(q, i, f_i, j, h_j), dot1(q, i, g_i, j, h_j)])
    return np.concatenate([d, phi]), np.vstack([D, C])


def universal(q, i, s_i, axis_i, j, s_j, axis_j):
    d, D = separation(q, i, s_i, j, s_j)
    phi, row = dot1(q, i, unit(axis_i), j, unit(axis_j))
    return np.append(d, phi), np.vstack([D, row])


def cylindrical(q, i, s_i, axis_i, j, s_j, axis_j):
    f_i, g_i, _ = axis_frame(axis_i)
    h_j = unit(axis_j)
    d, D = separation(q, i, s_i, j, s_j)
    return _stack(
        [
            dot1(q, i, f_i, j, h_j),
            dot1(q, i, g_i, j, h_j),
            dot2(q, i, f_i, d, D),
            dot2(q, i, g_i, d, D),
        ]
    )


def prismatic(q, i, s_i, axis_i, j, s_j, axis_j, R0):
    """Cylindrical and dot-1(f_i, R0^T g_i)."""
    phi, C = cylindrical(q, i, s_i, axis_i, j, s_j, axis_j)
    f_i, g_i, _ = axis_frame(axis_i)
    twist, row = dot1(q, i, f_i, j, R0.T @ g_i)
    return np.append(phi, twist), np.vstack([C, row])


def weld(q, i, s_i, j, s_j, R0):
    """Spherical and dot-1(e_a, R0^T e_b) for (a, b) = (2, 3), (3, 1), (1, 2)."""
    d, D = separation(q, i, s_i, j, s_j)
    e = np.eye(3)
    phi, C = _stack([dot1(q, i, e[a], j, R0.T @ e[b]) for a, b in ((1, 2), (2, 0), (0, 1))])
    return np.concatenate([d, phi]), np.vstack([D, C])


def distance(q, i, s_i, j, s_j, length):
    """d.d - L^2 and 2 d^T D."""
    d, D = separation(q, i, s_i, j, s_j)
    return np.array([d @ d - length**2]), (2.0 * d @ D)[None]


def point_on_line(q, i, s_i, axis_i, j, s_j):
    f_i, g_i, _ = axis_frame(axis_i)
    d, D = separation(q, i, s_i, j, s_j)
    return _stack([dot2(q, i, f_i, d, D), dot2(q, i, g_i, d, D)])


def point_on_plane(q, i, s_i, normal_i, j, s_j):
    d, D = separation(q, i, s_i, j, s_j)
    return _stack([dot2(q, i, unit(normal_i), d, D)])


def parallel_axes(q, i, axis_i, j, axis_j):
    f_i, g_i, _ = axis_frame(axis_i)
    h_j = unit(axis_j)
    return _stack([dot1(q, i, f_i, j, h_j), dot1(q, i, g_i, j, h_j)])


def planar(q, i, s_i, axis_i, j, s_j, axis_j):
    f_i, g_i, h_i = axis_frame(axis_i)
    h_j = unit(axis_j)
    d, D = separation(q, i, s_i, j, s_j)
    return _stack([dot1(q, i, f_i, j, h_j), dot1(q, i, g_i, j, h_j), dot2(q, i, h_i, d, D)])


# ----- the angle about a revolute axis -------------------------------------------------------
def zero_angle_vectors(axis_i, axis_j, R0):
    """(f_i, g_i, f_j): f_j = R0^T f_i without its axis_j part, unit."""
    f_i, g_i, _ = axis_frame(axis_i)
    h_j = unit(axis_j)
    carried = R0.T @ f_i
    return f_i, g_i, unit(carried - (carried @ h_j) * h_j)


def cos_sin(q, i, axis_i, j, axis_j, R0):
    """((c, dc/dv), (s, ds/dv)): c = A_i f_i . A_j f_j, s = A_i g_i . A_j f_j."""
    f_i, g_i, f_j = zero_angle_vectors(axis_i, axis_j, R0)
    return dot1(q, i, f_i, j, f_j), dot1(q, i, g_i, j, f_j)


# ----- drivers: (Phi, C, b) or Pfaffian (C, b) ----------------------------------------------
def revolute_driver(q, t, i, axis_i, j, axis_j, R0, f):
    """cos(f) s - sin(f) c: C = cos(f) ds - sin(f) dc, b = -fdot (sin(f) s + cos(f) c)."""
    (c, dc), (s, ds) = cos_sin(q, i, axis_i, j, axis_j, R0)
    value, rate, _ = f(t)
    phi = np.cos(value) * s - np.sin(value) * c
    C = np.cos(value) * ds - np.sin(value) * dc
    b = -rate * (np.sin(value) * s + np.cos(value) * c)
    return np.array([phi]), C[None], np.array([b])


def prismatic_driver(q, t, i, s_i, axis_i, j, s_j, f):
    d, D = separation(q, i, s_i, j, s_j)
    phi, row = dot2(q, i, unit(axis_i), d, D)
    value, rate, _ = f(t)
    return np.array([phi - value]), row[None], np.array([-rate])


def point_driver(q, t, k, s, f):
    P, J = point(q, k, s)
    value, rate, _ = f(t)
    return P - value, J, -np.asarray(rate)


def angular_velocity_driver(q, t, i, axis_i, j, f):
    """g = (omega_j - omega_i) . A_i h_i - f: body i [0, -h_i^T], body j [0, h_i^T A_i^T A_j];
    b = -f(t)."""
    h_i = unit(axis_i)
    _, A_i = pose(q, i)
    _, A_j = pose(q, j)
    C = np.zeros((1, _ncols(q)))
    put(C, i, np.concatenate([np.zeros(3), -h_i])[None])
    put(C, j, np.concatenate([np.zeros(3), A_j.T @ A_i @ h_i])[None])
    return C, np.array([-f(t)[0]])


# ----- forces: generalized force in v-space ------------------------------------------------
def point_force(q, k, s, f):
    """(f, s x A^T f) on body k (the spatial note, section 2)."""
    _, A = pose(q, k)
    out = np.zeros(_ncols(q))
    put(out[None], k, np.concatenate([f, np.cross(s, A.T @ f)])[None])
    return out


def torque(q, k, tau):
    """(0, A^T tau) on body k."""
    _, A = pose(q, k)
    out = np.zeros(_ncols(q))
    put(out[None], k, np.concatenate([np.zeros(3), A.T @ tau])[None])
    return out


def spring_damper(q, v, i, s_i, j, s_j, k, c, l0):
    """-T D^T u, u = d / |d|, T = k (l - l0) + c u . D v; and the potential k (l - l0)^2 / 2."""
    d, D = separation(q, i, s_i, j, s_j)
    l = np.linalg.norm(d)
    u = d / l
    tension = k * (l - l0) + c * u @ D @ v
    return -tension * D.T @ u, 0.5 * k * (l - l0) ** 2


def rotational_spring_damper(q, v, i, axis_i, j, axis_j, R0, k, c, theta0):
    """delta = atan2(s', c') with (c', s') = (c, s) turned by -theta0, d delta = (c' ds' -
    s' dc') / (c'^2 + s'^2); Q = -(k delta + c d delta/dt) d delta^T; potential k delta^2 / 2."""
    (cc, dc), (ss, ds) = cos_sin(q, i, axis_i, j, axis_j, R0)
    c0, s0 = np.cos(theta0), np.sin(theta0)
    cp, dcp = cc * c0 + ss * s0, dc * c0 + ds * s0
    sp, dsp = ss * c0 - cc * s0, ds * c0 - dc * s0
    delta = np.arctan2(sp, cp)
    ddelta = (cp * dsp - sp * dcp) / (cp**2 + sp**2)
    tau = k * delta + c * ddelta @ v
    return -tau * ddelta, 0.5 * k * delta**2
