"""Gear pairs (also chain/sprocket and belt/pulley)."""

import abc
from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, pose, relative_angle


class AbstractGear(AbstractHolonomicPair):
    """The gear law theta_j - K theta_i - C = 0 (K = `ratio`, C = `offset`) between the angles
    theta_i, theta_j of gears i and j, measured from the ground (`Gear`) or from the link that
    carries them (`GearOnLink`): `angles(q)` gives them."""

    ratio: eqx.AbstractVar[Scalar]
    offset: eqx.AbstractVar[Scalar]
    num_rows: ClassVar[int] = 1

    def __check_init__(self):
        self.check_distinct(*self.bodies())
        self.check_scalar(self.ratio, "ratio")
        self.check_scalar(self.offset, "offset")

    @abc.abstractmethod
    def angles(self, q: Coordinates) -> tuple[Scalar, Scalar]:
        """(theta_i, theta_j): the angles of gears i and j that the law relates."""

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        theta_i, theta_j = self.angles(q)
        return jnp.reshape(theta_j - self.ratio * theta_i - self.offset, (1,))


class Gear(AbstractGear):
    """phi_j - K phi_i - C = 0 with K = `ratio`, C = `offset` (seed 003, "Gear pair").

    External gears K = -rho_i / rho_j, internal K = +rho_i / rho_j. Torque on i: K lambda,
    on j: -lambda.

    **Arguments:**
    - `name`: the element's name.
    - `i`: gear i (a body handle, or the ground).
    - `j`: gear j, whose angle follows phi_j = K phi_i + C (a body handle, or the ground).
    - `ratio`: K, the gear ratio dphi_j / dphi_i (dimensionless; negative for external gears).
    - `offset`: C, the angle phi_j - K phi_i in the assembled position (rad, default 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    ratio: Scalar = eqx.field(converter=as_f64)
    offset: Scalar = eqx.field(converter=as_f64, default=0.0)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def angles(self, q: Coordinates) -> tuple[Scalar, Scalar]:
        """(phi_i, phi_j): the absolute angles."""
        return pose(q, self.i)[1], pose(q, self.j)[1]


class GearOnLink(AbstractGear):
    """Gears i and j carried by a rotating link k (planet carrier).

    (phi_j - phi_k) - K (phi_i - phi_k) - C = 0 (seed 003, "Gear pair on rotating link k");
    torques: K lambda on i, -lambda on j, (1 - K) lambda on k.

    **Arguments:**
    - `name`: the element's name.
    - `i`: gear i (a body handle, or the ground).
    - `j`: gear j (a body handle, or the ground).
    - `k`: the link (planet carrier) that carries both gears' axes (a body handle, or the ground).
    - `ratio`: K, the gear ratio relative to the link, d(phi_j - phi_k) / d(phi_i - phi_k)
      (dimensionless; negative for external gears).
    - `offset`: C, the value of (phi_j - phi_k) - K (phi_i - phi_k) (rad, default 0).
    """

    name: str = eqx.field(static=True)
    i: Body = eqx.field(static=True)
    j: Body = eqx.field(static=True)
    k: Body = eqx.field(static=True)
    ratio: Scalar = eqx.field(converter=as_f64)
    offset: Scalar = eqx.field(converter=as_f64, default=0.0)

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j, self.k)

    def angles(self, q: Coordinates) -> tuple[Scalar, Scalar]:
        """(phi_i - phi_k, phi_j - phi_k): the angles relative to the link."""
        return relative_angle(q, self.k, self.i), relative_angle(q, self.k, self.j)
