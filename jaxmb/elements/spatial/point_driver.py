"""Driver of the absolute position of a body point."""

from typing import ClassVar

import equinox as eqx

from ..._custom_types import Coordinates, PairRowVector, Scalar
from .._base import drive_field
from ..drive import AbstractDrive
from ..geometry import Body, as_f64
from ._base import AbstractSpatialHolonomicPair
from .geometry import point
from .vectors import Vector3


class PointDriver(AbstractSpatialHolonomicPair):
    """The global position of point s of `body` is f(t) (3 rows).

    Phi = r + A s - f(t) = 0 (Haug, "Computer-Aided Kinematics and Dynamics of Mechanical
    Systems", absolute driving constraints); the multipliers are the driving force.

    **Arguments:**
    - `name`: the element's name.
    - `body`: the driven body (not the ground).
    - `s`: the driven point, in the body's frame (m).
    - `f`: f(t), the prescribed position in global components (m; a constant 3-vector or a
      drive function of time t returning one).
    """

    name: str = eqx.field(static=True)
    body: Body = eqx.field(static=True)
    s: Vector3 = eqx.field(converter=as_f64)
    f: AbstractDrive = eqx.field(converter=drive_field)
    num_rows: ClassVar[int] = 3

    def __check_init__(self):
        self.check_free_body(self.body, "body", "drive")
        self.check_vector(self.s, "s", size=3)
        self.check_drive(self.f, "f", shape=(3,))

    def bodies(self) -> tuple[Body, ...]:
        return (self.body,)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        return point(q, self.body, self.s) - self.f(t)
