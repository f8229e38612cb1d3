"""`Problem`: what `simulate` hands a formulation's `integrate` hook, its arguments checked."""

import diffrax
import equinox as eqx
from jaxtyping import Array, Float

from .._custom_types import Coordinates, Scalar


class Problem(eqx.Module):
    """An initial-value problem of `simulate`: the initial state `q0`, `qd0` (shapes checked,
    not yet their consistency: each formulation checks that in its own program), the times
    `t0`, `t1` and the saved instants `ts` (checked), and the solver options as the user gave
    them (`stabilization` may still be "default": each formulation resolves it)."""

    q0: Coordinates
    qd0: Coordinates
    t0: Scalar
    t1: Scalar
    ts: Float[Array, " T"]
    rtol: Scalar
    atol: Scalar
    dt0: Scalar | None = None
    solver: diffrax.AbstractSolver | None = None
    stepsize_controller: diffrax.AbstractStepSizeController | None = None
    stabilization: object = "default"
    adjoint: diffrax.AbstractAdjoint | None = None
    max_steps: int = eqx.field(static=True, default=200_000)
    throw: bool = eqx.field(static=True, default=True)
    progress: bool = eqx.field(static=True, default=False)
