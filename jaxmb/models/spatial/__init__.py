"""Ready-made spatial (3D) models: the IFToMM spatial slider-crank, the heavy top, a conical
pendulum and the planar four-bar built with 3D revolutes (the command line takes the planar
models by name; the spatial ones are built in Python for now)."""

from . import (
    conical_pendulum as conical_pendulum,
    four_bar as four_bar,
    heavy_top as heavy_top,
    slider_crank as slider_crank,
)
