"""Gear pairs (also chain/sprocket and belt/pulley)."""

from typing import ClassVar

import equinox as eqx
import jax.numpy as jnp

from .._custom_types import Coordinates, PairRowVector, Scalar
from ._base import AbstractHolonomicPair
from .geometry import Body, as_f64, pose


class Gear(AbstractHolonomicPair):
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
    num_rows: ClassVar[int] = 1

    def __check_init__(self):
        self.check_distinct(self.i, self.j)
        self.check_scalar(self.ratio, "ratio")
        self.check_scalar(self.offset, "offset")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        _, phi_i = pose(q, self.i)
        _, phi_j = pose(q, self.j)
        return jnp.reshape(phi_j - self.ratio * phi_i - self.offset, (1,))


class GearOnLink(AbstractHolonomicPair):
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
    num_rows: ClassVar[int] = 1

    def __check_init__(self):
        self.check_distinct(self.i, self.j, self.k)
        self.check_scalar(self.ratio, "ratio")
        self.check_scalar(self.offset, "offset")

    def bodies(self) -> tuple[Body, ...]:
        return (self.i, self.j, self.k)

    def residual(self, q: Coordinates, t: Scalar) -> PairRowVector:
        _, phi_i = pose(q, self.i)
        _, phi_j = pose(q, self.j)
        _, phi_k = pose(q, self.k)
        rel = (phi_j - phi_k) - self.ratio * (phi_i - phi_k) - self.offset
        return jnp.reshape(rel, (1,))
