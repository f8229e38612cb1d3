"""jaxmb: differentiable dynamics of planar rigid multibody systems with redundant constraints.

Importing jaxmb switches on float64 (`jax_enable_x64`).
"""

import jax as _jax

_jax.config.update("jax_enable_x64", True)

from . import drive as drive  # noqa: E402
from ._assemble import assemble as assemble  # noqa: E402
from ._geometry import Body as Body  # noqa: E402
from ._mechanism import Mechanism as Mechanism  # noqa: E402
from ._model import Model as Model  # noqa: E402
from ._solvability import (  # noqa: E402
    SolvabilityReport as SolvabilityReport,
    solvability as solvability,
)
from ._velocity import (  # noqa: E402
    KinematicsResult as KinematicsResult,
    consistent_velocity as consistent_velocity,
    kinematics as kinematics,
)
from .elements import (  # noqa: E402
    AbsoluteDriver as AbsoluteDriver,
    Distance as Distance,
    Force as Force,
    Gear as Gear,
    GearOnLink as GearOnLink,
    Gravity as Gravity,
    KnifeEdge as KnifeEdge,
    Parallel as Parallel,
    PinInSlot as PinInSlot,
    RelativeAngleDriver as RelativeAngleDriver,
    Revolute as Revolute,
    RotationalSpringDamper as RotationalSpringDamper,
    SpringDamper as SpringDamper,
    Torque as Torque,
    Translational as Translational,
    TranslationalDriver as TranslationalDriver,
    Weld as Weld,
)

__version__ = "0.1.0"
