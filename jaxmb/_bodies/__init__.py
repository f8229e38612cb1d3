"""Body kinds: how wide a body's position and velocity coordinates are, and the only
arithmetic on positions (the spatial note, section 8)."""

from .kind import AbstractBodyKind as AbstractBodyKind
from .planar import PLANAR as PLANAR, Planar as Planar
