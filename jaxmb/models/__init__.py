"""Ready-made models used by the demo, examples, tests and benchmarks."""

from . import (
    auxetic as auxetic,
    composed_pendulum as composed_pendulum,
    four_bar as four_bar,
    mobile_robot as mobile_robot,
    n_four_bar as n_four_bar,
    parallelogram as parallelogram,
    slider_crank as slider_crank,
    spatial as spatial,
)
from .auxetic import rotating_squares as rotating_squares
