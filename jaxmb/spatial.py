"""Spatial (3D) mechanisms: the joints, drivers and forces of `Mechanism(dim=3)`, and `lift`.

```python
import jaxmb as mb
from jaxmb import spatial as sp

m = mb.Mechanism(dim=3)
crank = m.body("crank", 0.12, (1e-4, 1e-5, 1e-4), r=(0.0, 0.1, 0.12))
m.add(sp.Revolute("A", m.ground, crank, s_i=(0.0, 0.1, 0.12), s_j=(0.0, 0.0, 0.0),
                  axis_i=(1.0, 0.0, 0.0), axis_j=(1.0, 0.0, 0.0)))
```
Coordinates per body: q = (x, y, z, w, qx, qy, qz) (centre of mass, unit quaternion, body
frame -> global) and v = (vx, vy, vz, wx, wy, wz) (the angular velocity in the body frame); the
docs' Spatial mechanisms page. `mb.Gravity` takes a 3-vector in a spatial mechanism.
"""

from ._model.lift import lift as lift
from .elements.spatial import (
    AngularVelocityDriver as AngularVelocityDriver,
    Cylindrical as Cylindrical,
    Distance as Distance,
    Force as Force,
    ParallelAxes as ParallelAxes,
    Planar as Planar,
    PointDriver as PointDriver,
    PointOnLine as PointOnLine,
    PointOnPlane as PointOnPlane,
    Prismatic as Prismatic,
    PrismaticDriver as PrismaticDriver,
    Revolute as Revolute,
    RevoluteDriver as RevoluteDriver,
    RotationalSpringDamper as RotationalSpringDamper,
    Spherical as Spherical,
    SpringDamper as SpringDamper,
    Torque as Torque,
    Universal as Universal,
    Weld as Weld,
)
