"""Ready-made models used by the demo, examples, tests and benchmarks."""

from . import composed_pendulum as composed_pendulum
from . import four_bar as four_bar
from . import mobile_robot as mobile_robot
from . import n_four_bar as n_four_bar
from . import parallelogram as parallelogram
from . import slider_crank as slider_crank
