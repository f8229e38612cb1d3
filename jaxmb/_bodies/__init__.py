"""Body kinds: how wide a body's position and velocity coordinates are, and the only
arithmetic on positions (the spatial note, section 8)."""

from .kind import AbstractBodyKind as AbstractBodyKind
from .planar import PLANAR as PLANAR, Planar as Planar
from .spatial import SPATIAL as SPATIAL, Spatial as Spatial

KINDS = {2: PLANAR, 3: SPATIAL}
"""The body kind of each dimension."""
