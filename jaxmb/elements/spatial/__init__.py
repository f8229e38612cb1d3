"""Spatial (3D) elements: joints, drivers and force elements on bodies with NQ = 7 coordinates
(r, p) each, p a quaternion of any non-zero length (A = A(p / |p|)); local vectors are
3-vectors in the body frames (global for the ground).

Helpers: `geometry` (pose, point, direction of a spatial body), `quaternion` (the rotation
with its custom JVP, angular rates; the quaternion algebra itself is the body kind's,
`jaxmb._bodies.quaternion`) and `bind_reference` (the build-time orientations, for
`Mechanism.add`).
"""

from . import geometry as geometry, quaternion as quaternion
from ._base import (
    AbstractSpatialElement as AbstractSpatialElement,
    AbstractSpatialForceElement as AbstractSpatialForceElement,
    AbstractSpatialHolonomicPair as AbstractSpatialHolonomicPair,
    AbstractSpatialPfaffianPair as AbstractSpatialPfaffianPair,
)
from .angular_velocity_driver import AngularVelocityDriver as AngularVelocityDriver
from .cylindrical import Cylindrical as Cylindrical
from .distance import Distance as Distance
from .force import Force as Force, Torque as Torque
from .parallel_axes import ParallelAxes as ParallelAxes
from .planar import Planar as Planar
from .point_driver import PointDriver as PointDriver
from .point_on_line import PointOnLine as PointOnLine
from .point_on_plane import PointOnPlane as PointOnPlane
from .prismatic import Prismatic as Prismatic
from .prismatic_driver import PrismaticDriver as PrismaticDriver
from .reference import bind_reference as bind_reference
from .revolute import Revolute as Revolute
from .revolute_driver import RevoluteDriver as RevoluteDriver
from .rotational_spring_damper import RotationalSpringDamper as RotationalSpringDamper
from .spherical import Spherical as Spherical
from .spring_damper import SpringDamper as SpringDamper
from .universal import Universal as Universal
from .weld import Weld as Weld
