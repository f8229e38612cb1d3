"""Planar kinematics in numpy, in jaxmb's conventions (API.md): q stacks (x, y, phi) per body,
A(phi) = [[c, -s], [s, c]] maps body-frame vectors to the global frame, Omega = [[0, -1],
[1, 0]] so that dA/dphi = Omega A, and the ground (body index None) is the pose (0, 0, 0) with
no columns."""

import numpy as np

OMEGA = np.array([[0.0, -1.0], [1.0, 0.0]])
I2 = np.eye(2)
GROUND = None


def rot(phi):
    """A(phi), body frame -> global frame."""
    c, s = np.cos(phi), np.sin(phi)
    return np.array([[c, -s], [s, c]])


def cross(a, b):
    """Planar cross product a_x b_y - a_y b_x = (Omega a)^T b."""
    return a[0] * b[1] - a[1] * b[0]


def perp(a):
    """Omega a: counter-clockwise rotation by 90 degrees (seed 003's [R] a)."""
    return np.array([-a[1], a[0]])


def unit(v):
    return np.asarray(v, float) / np.linalg.norm(v)


def pose(x, k):
    """(r, phi) of body k in the stacked vector x, or (rd, phid) when x holds velocities;
    ground: zeros."""
    if k is GROUND:
        return np.zeros(2), 0.0
    return np.asarray(x[3 * k : 3 * k + 2], float), float(x[3 * k + 2])


def put(rows, k, block):
    """Add a (rows, 3) block into the columns of body k (nothing for the ground)."""
    if k is not GROUND:
        rows[:, 3 * k : 3 * k + 3] += block


def rigid_motion(q, alpha, shift):
    """q after rotating every body pose by alpha about the origin and translating by shift."""
    q = np.asarray(q, float).reshape(-1, 3)
    xy = q[:, :2] @ rot(alpha).T + np.asarray(shift, float)
    return np.concatenate([xy, q[:, 2:] + alpha], axis=1).reshape(-1)
