"""Applied force elements; each returns its generalized force Q (virtual work Q^T delta q)."""

from typing import ClassVar

import equinox as eqx
import jax
import jax.numpy as jnp
from jaxtyping import Array, Float

from .._custom_types import Coordinates, Scalar, Vector2
from ._base import AbstractForceElement, drive_field, point_force
from .drive import AbstractDrive
from .geometry import Body, as_f64, dot2, point, pose
from .model_view import ModelView


class Gravity(AbstractForceElement):
    """Uniform gravity g acting at every centre of mass: Q_k = (m_k g, 0) over body k's
    coordinates (the orientation's entries zero). Planar or spatial by the length of g.

    **Arguments:**
    - `g`: the gravitational acceleration, in global components (m/s^2; e.g. (0, -9.81), or
      (0, 0, -9.81) in a spatial mechanism).
    - `name`: the element's name (default "gravity").
    """

    g: Float[Array, " dim"] = eqx.field(converter=as_f64)
    name: str = eqx.field(static=True, default="gravity")

    def __check_init__(self):
        self.check_not_text(self.g, "g")
        if jnp.shape(self.g) not in ((2,), (3,)):
            self.fail(
                f"g must be a 2-vector (planar) or a 3-vector (spatial), got shape "
                f"{jnp.shape(self.g)}"
            )
        self.check_vector(self.g, "g", size=self.dimension())

    def dimension(self) -> int:
        """2 or 3: the length of g."""
        return int(jnp.shape(self.g)[0])

    def bodies(self) -> tuple[Body, ...]:
        return ()

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        rest = model.kind.nq - self.dimension()  # the orientation's coordinates
        per_body = jnp.concatenate(
            [model.masses[:, None] * self.g[None, :], jnp.zeros((model.num_bodies, rest))], axis=1
        )
        return per_body.reshape(-1)


class SpringDamper(AbstractForceElement):
    """Linear spring-damper between point s_i of body i and s_j of body j.

    Tension T = k (l - l0) + c dl/dt (positive when stretched) pulls the points together:
    Q = -T (dl/dq)^T with l = |r_j^P - r_i^P|.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `s_i`: the attachment point on body i, in body i's frame (m).
    - `s_j`: the attachment point on body j, in body j's frame (m).
    - `stiffness`: k, the spring stiffness (N/m, >= 0).
    - `damping`: c, the damping coefficient (N s/m, >= 0).
    - `free_length`: l0, the spring's unstretched length (m, >= 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    s_i: Vector2 = eqx.field(converter=as_f64)
    s_j: Vector2 = eqx.field(converter=as_f64)
    stiffness: Scalar = eqx.field(converter=as_f64)
    damping: Scalar = eqx.field(converter=as_f64)
    free_length: Scalar = eqx.field(converter=as_f64)
    nonnegative: ClassVar[tuple[str, ...]] = ("stiffness", "damping", "free_length")

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_point_pair(self.i, self.j, self.s_i, self.s_j)
        self.check_scalar(self.stiffness, "stiffness")
        self.check_scalar(self.damping, "damping")
        self.check_scalar(self.free_length, "free_length")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def length(self, q: Coordinates) -> Scalar:
        d = point(q, self.j, self.s_j) - point(q, self.i, self.s_i)
        return jnp.sqrt(dot2(d, d))

    def tension(self, q: Coordinates, qd: Coordinates) -> Scalar:
        l, ldot = jax.jvp(self.length, (q,), (qd,))
        return self.stiffness * (l - self.free_length) + self.damping * ldot

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        return -self.tension(q, qd) * jax.grad(self.length)(q)


class RotationalSpringDamper(AbstractForceElement):
    """Torsion spring-damper on theta = phi_j - phi_i: torque tau = k (theta - theta0) + c thetad,
    +tau on body i and -tau on body j.

    **Arguments:**
    - `name`: the element's name.
    - `i`: body i (a body handle, or the ground).
    - `j`: body j (a body handle, or the ground).
    - `stiffness`: k, the torsional stiffness (N m/rad, >= 0).
    - `damping`: c, the torsional damping coefficient (N m s/rad, >= 0).
    - `free_angle`: theta0, the relative angle phi_j - phi_i at which the spring is relaxed
      (rad, default 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    stiffness: Scalar = eqx.field(converter=as_f64)
    damping: Scalar = eqx.field(converter=as_f64)
    free_angle: Scalar = eqx.field(converter=as_f64, default=0.0)
    nonnegative: ClassVar[tuple[str, ...]] = ("stiffness", "damping")

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_scalar(self.stiffness, "stiffness")
        self.check_scalar(self.damping, "damping")
        self.check_scalar(self.free_angle, "free_angle")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def angle(self, q: Coordinates) -> Scalar:
        return pose(q, self.j)[1] - pose(q, self.i)[1]

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        theta, thetad = jax.jvp(self.angle, (q,), (qd,))
        tau = self.stiffness * (theta - self.free_angle) + self.damping * thetad
        return -tau * jax.grad(self.angle)(q)


class Force(AbstractForceElement):
    """Global-frame force f (constant 2-vector or drive function of t) at body point s.

    **Arguments:**
    - `name`: the element's name.
    - `body`: the body the force acts on.
    - `s`: the point of application, in the body's frame (m).
    - `f`: the force, in global components (N; a constant 2-vector or a drive function of
      time t).
    """

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    s: Vector2 = eqx.field(converter=as_f64)
    f: AbstractDrive = eqx.field(converter=drive_field)

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_body(self.body, "body")
        if self.body.is_ground:
            self.fail("cannot apply a force to the ground")
        self.check_vector(self.s, "s")
        self.check_drive(self.f, "f", shape=(2,))

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        f = self.f(t)
        if jnp.shape(f) != (2,):
            self.fail(f"force function must return a 2-vector, returned shape {jnp.shape(f)}")
        return point_force(q, self.body, self.s, f)


class Torque(AbstractForceElement):
    """Torque tau (constant or drive function of t), counter-clockwise positive, on `body`.

    **Arguments:**
    - `name`: the element's name.
    - `body`: the body the torque acts on.
    - `tau`: the torque, counter-clockwise positive (N m; a constant or a drive function of
      time t).
    """

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    tau: AbstractDrive = eqx.field(converter=drive_field)

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_body(self.body, "body")
        if self.body.is_ground:
            self.fail("cannot apply a torque to the ground")
        self.check_drive(self.tau, "tau")

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        tau = self.tau(t)
        if jnp.shape(tau) != ():
            self.fail(f"torque function must return a scalar, returned shape {jnp.shape(tau)}")
        return tau * jax.grad(lambda q_: pose(q_, self.body)[1])(q)
