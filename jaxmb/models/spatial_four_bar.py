"""The planar four-bar built with 3D revolutes (`mb.spatial.lift` of `four_bar.build`): every
revolute about z keeps its link in the plane, so each of the three out-of-plane equations is
held twice in the loop: 20 rows on 18 velocity coordinates, rank 17, p = 3 (the spatial note,
section 4); the in-plane forces of every joint are unique, the out-of-plane force and the two
bending moments are not."""

from .._model.lift import lift
from .._model.model import Model
from . import four_bar


def build(**kwargs) -> Model:
    """`lift(four_bar.build(**kwargs))`."""
    return lift(four_bar.build(**kwargs))
