"""The planar four-bar built with 3D revolutes (`mb.spatial.lift` of `four_bar.build`): every
revolute about z keeps its link in the plane, so each of the three out-of-plane equations is
held twice in the loop: 20 rows on 18 velocity coordinates, rank 17, p = 3 (the spatial note,
section 4); the in-plane forces of every joint are unique, the out-of-plane force and the two
bending moments are not."""

from typing import Any

from ..._model.lift import lift
from ..._model.model import Model
from .. import four_bar as planar_four_bar


def build(**kwargs: Any) -> Model:
    """`lift(planar_four_bar.build(**kwargs))`: the keyword arguments of the planar
    `four_bar.build`."""
    return lift(planar_four_bar.build(**kwargs))
