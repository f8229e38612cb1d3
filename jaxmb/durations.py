"""How long a run shows a model's motion whole (`default_duration`, the CLI's default t1)."""

import math
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .drawing import mechanism_size
from .elements import AbsoluteDriver, Gravity, RelativeAngleDriver, TranslationalDriver, drive

if TYPE_CHECKING:
    from ._model.model import Model


def _drive_times(f, angle):
    """(cycle, length) of a drive function: its period (s) where it repeats (a harmonic; a
    steady rotation, `angle`: one turn), its length where it is a profile that ends."""
    if isinstance(f, drive.Offset):
        return _drive_times(f.delta, angle)
    if isinstance(f, drive.Harmonic):
        omega = np.abs(np.asarray(f.omega, float))
        omega = omega[np.isfinite(omega) & (omega > 0)]
        return (float(2 * np.pi / omega.min()) if omega.size else None), None
    if isinstance(f, drive.Linear) and angle:
        slope = float(np.max(np.abs(np.asarray(f.slope, float))))
        return (2 * np.pi / slope if slope > 0 else None), None
    if isinstance(f, drive.SmoothSteps):
        return None, float(np.max(np.asarray(f.ends, float)))
    if isinstance(f, drive.Spline):
        return None, float(np.asarray(f.t, float)[-1])
    return None, None


def _nice(t):
    """t rounded up to 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a power of ten."""
    power = 10.0 ** math.floor(math.log10(t))
    return next(m * power for m in (1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10) if m * power >= t)


def default_duration(model: "Model", qd0: ArrayLike | None = None) -> float:
    """The length of run (s) that shows the motion of `model` whole: one cycle of its driven
    motion (the longest period of its drivers: a harmonic drive, a steady rotation's turn), or
    the length of a drive profile that ends (a steering manoeuvre) with 15% to settle; for an
    undriven model two periods 2 pi sqrt(L / g) of a pendulum as long as the mechanism (L the
    diagonal of the box around its points) under its gravity, or, without gravity, the time
    its fastest point takes to travel L at the initial velocity `qd0`; 1 s when none of these
    applies. All but a period are rounded up to 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 times a
    power of ten."""
    cycles, lengths = [], []
    for pair in model.pairs:
        if isinstance(pair, (RelativeAngleDriver, AbsoluteDriver, TranslationalDriver)):
            angle = isinstance(pair, RelativeAngleDriver) or (
                isinstance(pair, AbsoluteDriver) and pair.coordinate == 2
            )
            f = pair.d if isinstance(pair, TranslationalDriver) else pair.f
            cycle, length = _drive_times(f, angle)
            cycles += [cycle] if cycle else []
            lengths += [_nice(1.15 * length)] if length else []
    if cycles or lengths:
        return max(cycles + lengths)
    size = mechanism_size(model, np.asarray(model.q0, float))
    g = sum(
        float(np.hypot(*np.asarray(e.g, float)))
        for e in model.force_elements
        if isinstance(e, Gravity)
    )
    if g > 0:
        return _nice(2 * 2 * np.pi * np.sqrt(size / g))
    if qd0 is not None and model.n:
        qd = np.asarray(qd0, float).reshape(-1, 3)
        speed = float(np.max(np.hypot(qd[:, 0], qd[:, 1]) + np.abs(qd[:, 2]) * size / 2))
        if speed > 0:
            return _nice(size / speed)
    return 1.0
