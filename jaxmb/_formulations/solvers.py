"""`default_solver`: the Runge-Kutta pair `simulate` integrates with when none is given."""

import diffrax
import numpy as np

from .._runtime import errors as _errors

TIGHT_RTOL = 1e-10
"""At this relative tolerance and below, the default solver is the 8th-order Dopri8 instead of
the 5th-order Tsit5. A pair of order p takes about rtol^(-1/p) steps, so the higher order
wins once the tolerance is tight enough to pay for its 13 evaluations per step against
Tsit5's 6: on IFToMM A02 N = 40 over 20 s at rtol 1e-10 / atol 1e-12, Dopri8 takes 1,641 steps
against Tsit5's 4,085 (4.9 s against 6.4 s), and its global error is 7.5e-8 m against 1.24e-7 m
(design measurement D13 of benchmarks/results/design_measurements.md); at the default rtol 1e-8
Tsit5 is faster on small models (robot 20 s 0.123 s against 0.176 s, D12)."""


def default_solver(rtol) -> diffrax.AbstractSolver:
    """Tsit5, or Dopri8 where `rtol` is known (not traced) and at most TIGHT_RTOL. A traced
    rtol (a batch of tolerances, or rtol an argument of a jitted function) keeps Tsit5, so
    new values of it reuse one program; a concrete one picks the pair by its size."""
    value = _errors.concrete(rtol)
    if value is not None and np.ndim(value) == 0 and float(value) <= TIGHT_RTOL:
        return diffrax.Dopri8()
    return diffrax.Tsit5()
