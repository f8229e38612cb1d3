"""Ready-made models used by the demo, examples, tests and benchmarks."""

from . import (
    auxetic as auxetic,
    composed_pendulum as composed_pendulum,
    conical_pendulum as conical_pendulum,
    four_bar as four_bar,
    heavy_top as heavy_top,
    mobile_robot as mobile_robot,
    n_four_bar as n_four_bar,
    parallelogram as parallelogram,
    slider_crank as slider_crank,
    spatial_four_bar as spatial_four_bar,
    spatial_slider_crank as spatial_slider_crank,
)
from .auxetic import rotating_squares as rotating_squares
