"""Applied force elements; each returns its generalized force Q (virtual work Q^T delta q)."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp

from .._geometry import Body, as_f64, point, pose
from ..drive import AbstractDrive
from ._base import AbstractForceElement, drive_field, point_force


class Gravity(AbstractForceElement):
    """Uniform gravity g (global 2-vector) acting at every centre of mass: Q_k = (m_k g, 0)."""

    g: jnp.ndarray = eqx.field(converter=as_f64)
    name: str = eqx.field(static=True, default="gravity")

    def __check_init__(self):
        self.check_vector(self.g, "g")

    def bodies(self):
        return ()

    def generalized_force(self, model, q, qd, t):
        per_body = jnp.concatenate(
            [model.masses[:, None] * self.g[None, :], jnp.zeros((model.num_bodies, 1))], axis=1
        )
        return per_body.reshape(-1)


class SpringDamper(AbstractForceElement):
    """Linear spring-damper between point s_i of body i and s_j of body j.

    Tension T = k (l - l0) + c dl/dt (positive when stretched) pulls the points together:
    Q = -T (dl/dq)^T with l = |r_j^P - r_i^P|.
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: jnp.ndarray = eqx.field(converter=as_f64)
    s_j: jnp.ndarray = eqx.field(converter=as_f64)
    stiffness: jnp.ndarray = eqx.field(converter=as_f64)
    damping: jnp.ndarray = eqx.field(converter=as_f64)
    free_length: jnp.ndarray = eqx.field(converter=as_f64)
    nonnegative: ClassVar[tuple[str, ...]] = ("stiffness", "damping", "free_length")

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_vector(self.s_i, "s_i")
        self.check_vector(self.s_j, "s_j")
        self.check_scalar(self.stiffness, "stiffness")
        self.check_scalar(self.damping, "damping")
        self.check_scalar(self.free_length, "free_length")

    def bodies(self):
        return (self.i, self.j)

    def length(self, q):
        d = point(q, self.j, self.s_j) - point(q, self.i, self.s_i)
        return jnp.sqrt(d @ d)

    def tension(self, q, qd):
        l, ldot = jax.jvp(self.length, (q,), (qd,))
        return self.stiffness * (l - self.free_length) + self.damping * ldot

    def generalized_force(self, model, q, qd, t):
        return -self.tension(q, qd) * jax.grad(self.length)(q)


class RotationalSpringDamper(AbstractForceElement):
    """Torsion spring-damper on theta = phi_j - phi_i: torque tau = k (theta - theta0) + c thetad,
    +tau on body i and -tau on body j."""

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    stiffness: jnp.ndarray = eqx.field(converter=as_f64)
    damping: jnp.ndarray = eqx.field(converter=as_f64)
    free_angle: jnp.ndarray = eqx.field(converter=as_f64, default=0.0)
    nonnegative: ClassVar[tuple[str, ...]] = ("stiffness", "damping")

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_scalar(self.stiffness, "stiffness")
        self.check_scalar(self.damping, "damping")
        self.check_scalar(self.free_angle, "free_angle")

    def bodies(self):
        return (self.i, self.j)

    def angle(self, q):
        return pose(q, self.j)[1] - pose(q, self.i)[1]

    def generalized_force(self, model, q, qd, t):
        theta, thetad = jax.jvp(self.angle, (q,), (qd,))
        tau = self.stiffness * (theta - self.free_angle) + self.damping * thetad
        return -tau * jax.grad(self.angle)(q)


class Force(AbstractForceElement):
    """Global-frame force f (constant 2-vector or drive function of t) at body point s."""

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    s: jnp.ndarray = eqx.field(converter=as_f64)
    f: AbstractDrive = eqx.field(converter=drive_field)

    def __check_init__(self):
        self.check_body(self.body, "body")
        if self.body.is_ground:
            self.fail("cannot apply a force to the ground")
        self.check_vector(self.s, "s")
        self.check_drive(self.f, "f", shape=(2,))

    def bodies(self):
        return (self.body,)

    def generalized_force(self, model, q, qd, t):
        f = self.f(t)
        if jnp.shape(f) != (2,):
            self.fail(f"force function must return a 2-vector, returned shape {jnp.shape(f)}")
        return point_force(q, self.body, self.s, f)


class Torque(AbstractForceElement):
    """Torque tau (constant or drive function of t), counter-clockwise positive, on `body`."""

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    tau: AbstractDrive = eqx.field(converter=drive_field)

    def __check_init__(self):
        self.check_body(self.body, "body")
        if self.body.is_ground:
            self.fail("cannot apply a torque to the ground")
        self.check_drive(self.tau, "tau")

    def bodies(self):
        return (self.body,)

    def generalized_force(self, model, q, qd, t):
        tau = self.tau(t)
        if jnp.shape(tau) != ():
            self.fail(f"torque function must return a scalar, returned shape {jnp.shape(tau)}")
        return tau * jax.grad(lambda q_: pose(q_, self.body)[1])(q)
