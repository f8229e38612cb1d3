"""Drive functions f(t) for drivers and applied loads: the public name of
`jaxmb.elements.drive`, where they are defined beside the elements that use them."""

from .elements.drive import (
    AbstractDrive as AbstractDrive,
    Constant as Constant,
    Harmonic as Harmonic,
    Linear as Linear,
    Offset as Offset,
    Polynomial as Polynomial,
    SmoothSteps as SmoothSteps,
    Spline as Spline,
    as_drive as as_drive,
)
