"""The element catalogue: constraint pairs, drivers, knife edges and force elements."""

from ._base import (
    AbstractElement as AbstractElement,
    AbstractForceElement as AbstractForceElement,
    AbstractHolonomicPair as AbstractHolonomicPair,
    AbstractNonholonomicPair as AbstractNonholonomicPair,
    AbstractPair as AbstractPair,
)
from .bushing import Bushing as Bushing
from .distance import Distance as Distance
from .drivers import (
    AbsoluteDriver as AbsoluteDriver,
    RelativeAngleDriver as RelativeAngleDriver,
    TranslationalDriver as TranslationalDriver,
)
from .forces import (
    Force as Force,
    Gravity as Gravity,
    RotationalSpringDamper as RotationalSpringDamper,
    SpringDamper as SpringDamper,
    Torque as Torque,
)
from .friction import (
    AbstractFriction as AbstractFriction,
    RevoluteFriction as RevoluteFriction,
    TranslationalFriction as TranslationalFriction,
)
from .gear import Gear as Gear, GearOnLink as GearOnLink
from .knife_edge import KnifeEdge as KnifeEdge
from .parallel import Parallel as Parallel
from .pin_in_slot import PinInSlot as PinInSlot
from .revolute import Revolute as Revolute
from .translational import Translational as Translational
from .weld import Weld as Weld
