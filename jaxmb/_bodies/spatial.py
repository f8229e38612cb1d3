"""The spatial body: q = (r, p) (centre of mass, unit quaternion), v = (rdot, omega') with the
angular velocity omega' in the body frame, M = diag(m, m, m, J1, J2, J3) in principal axes
(the spatial note, sections 1-2; Chrono's ChBody, Nikravesh ch. 11)."""

import dataclasses
from typing import ClassVar

import jax.numpy as jnp

from . import quaternion as quat
from .kind import AbstractBodyKind


@dataclasses.dataclass(frozen=True)  # no fields: every instance equal; pinned by its class
class Spatial(AbstractBodyKind):
    """A rigid body in 3D: 7 position coordinates (x, y, z, w, qx, qy, qz) and 6 velocity
    coordinates (vx, vy, vz global, wx, wy, wz in the body frame).

        rdot = v_r,    pdot = 1/2 p (x) (0, omega'),
        F    = (f, n' - omega' x J omega')     (the gyroscopic term from Euler's equations),

    the retraction r <- r + dr, p <- normalize(p (x) exp(dtheta)) with dtheta in the body frame
    (Chrono's `IntStateIncrement`)."""

    dim: ClassVar[int] = 3
    nq: ClassVar[int] = 7
    nv: ClassVar[int] = 6
    nodes: ClassVar[tuple[int, ...]] = (3, 3)
    position_names: ClassVar[tuple[str, ...]] = ("x", "y", "z", "w", "qx", "qy", "qz")
    velocity_names: ClassVar[tuple[str, ...]] = ("vx", "vy", "vz", "wx", "wy", "wz")
    force_names: ClassVar[tuple[str, ...]] = ("fx", "fy", "fz", "mx", "my", "mz")

    def qdot(self, q, v):
        pdot = 0.5 * quat.product(q[..., 3:], quat.pure(v[..., 3:]))
        return jnp.concatenate([v[..., :3], pdot], axis=-1)

    def pull_back(self, q, Q):
        """(Q_r, 1/2 vec(conj(p) (x) Q_p)): the transpose of p -> 1/2 p (x) (0, omega')."""
        moment = 0.5 * quat.product(quat.conjugate(q[..., 3:]), Q[..., 3:])[..., 1:]
        return jnp.concatenate([Q[..., :3], moment], axis=-1)

    def retract(self, q, dv):
        p = quat.normalized(quat.product(q[..., 3:], quat.exp(dv[..., 3:])))
        return jnp.concatenate([q[..., :3] + dv[..., :3], p], axis=-1)

    def difference(self, q1, q0):
        """(r1 - r0, log(conj(p0) (x) p1)): the body-frame rotation vector from p0 to p1 (the
        same vector in either body frame: it is the relative rotation's axis)."""
        rel = quat.product(quat.conjugate(q0[..., 3:]), q1[..., 3:])
        return jnp.concatenate([q1[..., :3] - q0[..., :3], quat.log(rel)], axis=-1)

    def normalize(self, q):
        return jnp.concatenate([q[..., :3], quat.normalized(q[..., 3:])], axis=-1)

    def mass_diagonal(self, mass, inertia):
        m = mass[..., None]
        return jnp.concatenate([m, m, m, inertia], axis=-1)

    def inertia_force(self, inertias, v):
        w = v.reshape(-1, 6)[:, 3:]
        gyroscopic = -jnp.cross(w, inertias * w)
        return jnp.concatenate([jnp.zeros_like(w), gyroscopic], axis=1).reshape(-1)


SPATIAL = Spatial()
"""The spatial kind (every model of `Mechanism(dim=3)`)."""
