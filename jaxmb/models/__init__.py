"""Ready-made models used by the demo, examples, tests and benchmarks."""

from . import composed_pendulum, four_bar, mobile_robot, n_four_bar, parallelogram, slider_crank
