"""Applied force and torque on a spatial body (generalized forces in q-space)."""

from typing import ClassVar

import equinox as eqx
import jax

from ..._custom_types import Coordinates, Scalar
from .._base import drive_field
from ..drive import AbstractDrive
from ..geometry import Body, as_f64
from ..model_view import ModelView
from ._base import AbstractSpatialForceElement
from .geometry import point, pose
from .quaternion import global_rate
from .vectors import Vector3


def point_force(q: Coordinates, body: Body, s: Vector3, f: Vector3) -> Coordinates:
    """Generalized force in q-space of the global force f at body point s: (dP/dq)^T f, a VJP
    of P = r + A(p / |p|) s. Its pull-back T(q)^T Q is (f, s x A^T f) (the spatial note,
    section 2)."""
    _, vjp = jax.vjp(lambda q_: point(q_, body, s), q)
    return vjp(f)[0]


def torque_force(q: Coordinates, body: Body, tau: Vector3) -> Coordinates:
    """Generalized force in q-space of the global torque tau on `body`: Q with
    Q . qdot = tau . omega for every qdot, omega = 2 vec(pdot (x) conj(p)) / |p|^2 the global
    angular velocity, i.e. the VJP of pdot -> omega(p, pdot) at tau, in the quaternion slots.
    Its pull-back T(q)^T Q is (0, A^T tau), the body-frame moment."""
    p = pose(q, body)[1]

    def omega(qdot):
        return global_rate(p, pose(qdot, body)[1])

    _, vjp = jax.vjp(omega, q)  # linear in its argument: any q-shaped point will do
    return vjp(tau)[0]


class Force(AbstractSpatialForceElement):
    """Global force f (constant 3-vector or drive function of t) at point s of `body`.

    Q = (dP/dq)^T f with P = r + A s, a VJP (q-space, NQ entries per body); the virtual work
    is f . delta P (Nikravesh, "Computer-Aided Analysis of Mechanical Systems", ch. 6: the
    moment s x A^T f in the body frame once pulled back with T(q)^T).

    **Arguments:**
    - `name`: the element's name.
    - `body`: the body the force acts on (not the ground).
    - `s`: the point of application, in the body's frame (m).
    - `f`: the force, in global components (N; a constant 3-vector or a drive function of
      time t returning one).
    """

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    s: Vector3 = eqx.field(converter=as_f64)
    f: AbstractDrive = eqx.field(converter=drive_field)

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_free_body(self.body, "body", "apply a force to")
        self.check_vector(self.s, "s", size=3)
        self.check_drive(self.f, "f", shape=(3,))

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        return point_force(q, self.body, self.s, self.f(t))


class Torque(AbstractSpatialForceElement):
    """Global torque tau (constant 3-vector or drive function of t) on `body`.

    Q is the VJP at tau of the global angular velocity omega(p, pdot) = 2 vec(pdot (x)
    conj(p)) / |p|^2 with respect to qdot, so Q . qdot = tau . omega (q-space, NQ entries per
    body); pulled back with T(q)^T it is the body-frame moment A^T tau (Nikravesh,
    "Computer-Aided Analysis of Mechanical Systems", ch. 6).

    **Arguments:**
    - `name`: the element's name.
    - `body`: the body the torque acts on (not the ground).
    - `tau`: the torque, in global components (N m; a constant 3-vector or a drive function of
      time t returning one).
    """

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    tau: AbstractDrive = eqx.field(converter=drive_field)

    local: ClassVar[bool] = True

    def __check_init__(self):
        self.check_free_body(self.body, "body", "apply a torque to")
        self.check_drive(self.tau, "tau", shape=(3,))

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def generalized_force(
        self, model: ModelView, q: Coordinates, qd: Coordinates, t: Scalar
    ) -> Coordinates:
        return torque_force(q, self.body, self.tau(t))
