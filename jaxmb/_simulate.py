"""Time integration of the null-space formulation with diffrax.

Constraint stabilization (Baumgarte): the acceleration constraints are replaced by

    C qdd = gamma - 2 alpha (C qd + b) - beta^2 [Phi; 0],

so violations e of the holonomic rows obey e'' + 2 alpha e' + beta^2 e = 0 and those of the
Pfaffian rows e' + 2 alpha e = 0: integration errors decay instead of accumulating as they
would in the pure index-1 formulation. alpha = beta = 10 1/s (critically damped, time constant
0.1 s) is far slower than the step sizes the tolerances imply yet fast against the motions of
interest, so the ODE does not become stiff and the drift stays at the level of the local errors.
"""

import diffrax
import equinox as eqx
import jax
import jax.numpy as jnp

from ._dynamics import Eliminate, accelerations, eliminated_solve, keep_mask
from ._independent import IndependentCoordinates, simulate_independent

POSITION_TOL = 1e-8
VELOCITY_TOL = 1e-8


class Baumgarte(eqx.Module):
    """Baumgarte stabilization parameters (1/s)."""

    alpha: float = 10.0
    beta: float = 10.0

    def gamma(self, model, q, qd, t):
        g = model.velocity_residual(q, qd, t)
        phi_rows = jnp.zeros(model.num_rows, q.dtype).at[model.holonomic_rows].set(
            model.phi(q, t)
        )
        return model.gamma(q, qd, t) - 2.0 * self.alpha * g - self.beta**2 * phi_rows


class Trajectory(eqx.Module):
    """Saved states of a simulation: `ts` (T,), `q` and `qd` (T, n); `result` is diffrax's
    result code (`success` True when the integration reached t1); `repartitioned` (T,) marks
    the saved instants where the independent-coordinate formulation changed its partition
    (None for the other formulations)."""

    ts: jnp.ndarray
    q: jnp.ndarray
    qd: jnp.ndarray
    result: diffrax.RESULTS
    num_steps: jnp.ndarray
    repartitioned: jnp.ndarray | None = None

    @property
    def success(self):
        return self.result == diffrax.RESULTS.successful


def _check_initial_state(model, q0, qd0, t0):
    if model.m:
        phi = jnp.max(jnp.abs(model.phi(q0, t0)))
        q0 = eqx.error_if(
            q0,
            phi > POSITION_TOL,
            "simulate: the initial configuration violates the position constraints "
            f"(max |Phi| above {POSITION_TOL}); call mb.assemble(model, q0) first.",
        )
    if model.num_rows:
        g = jnp.max(jnp.abs(model.velocity_residual(q0, qd0, t0)))
        qd0 = eqx.error_if(
            qd0,
            g > VELOCITY_TOL * (1.0 + jnp.max(jnp.abs(qd0))),
            "simulate: the initial velocity violates the velocity constraints C qd + b = 0; "
            "call mb.consistent_velocity(model, q0, qd0) first.",
        )
    return q0, qd0


def simulate(
    model,
    q0,
    qd0,
    t1,
    *,
    ts=None,
    t0=0.0,
    rtol=1e-8,
    atol=1e-10,
    solver=None,
    dt0=None,
    max_steps=200_000,
    stabilization=Baumgarte(),
    adjoint=None,
    throw=True,
    progress=False,
    formulation="null_space",
    stepsize_controller=None,
):
    """Integrate M qdd + C^T lambda = F with the null-space formulation (seed 001, eq. 13).

    **Arguments:**
    - `model`, initial state `q0`, `qd0` (consistent: see `assemble`, `consistent_velocity`),
      final time `t1`, start `t0`.
    - `ts`: times to save (default 201 equally spaced instants from t0 to t1).
    - `rtol`, `atol`: error tolerances of the adaptive step-size controller.
    - `solver`: a diffrax solver (default `diffrax.Tsit5()`; `diffrax.Dopri5()` is the
      Dormand-Prince pair used by seed 001).
    - `stabilization`: `Baumgarte(alpha, beta)` or None.
    - `adjoint`: diffrax adjoint for reverse-mode gradients (default recursive checkpointing).
    - `throw`: raise on failure; with False, inspect `Trajectory.result` (per item under vmap).
    - `progress`: print a text progress meter.
    - `stepsize_controller`: replaces the default `diffrax.PIDController(rtol, atol)`, e.g.
      `diffrax.ConstantStepSize()` with `dt0` for a fixed step sequence.
    - `formulation`: "null_space" (seed 001 eq. 13, default), or `mb.Eliminate(rows)` / "auto":
      the augmented system (eq. 11) with those redundant rows removed (section 3.1); all give
      the same motion, which the tests check; "independent" or `mb.IndependentCoordinates()`:
      seed 002's minimal-order equations in independent coordinates with automatic
      re-partitioning (holonomic models; no stabilization needed: the dependent coordinates
      are solved by Newton, so Phi stays at round-off).

    **Returns:** `Trajectory(ts, q, qd, result, num_steps)`.

    ```python
    traj = mb.simulate(model, q0, qd0, t1=20.0, ts=jnp.linspace(0, 20, 401))
    ```
    """
    q0 = jnp.asarray(q0, jnp.float64)
    qd0 = jnp.asarray(qd0, jnp.float64)
    t0 = jnp.asarray(t0, jnp.float64)
    ts = jnp.linspace(t0, t1, 201) if ts is None else jnp.asarray(ts, jnp.float64)
    q0, qd0 = _check_initial_state(model, q0, qd0, t0)

    if formulation == "independent":
        formulation = IndependentCoordinates()
    if isinstance(formulation, IndependentCoordinates):
        ts_full = jnp.concatenate([t0[None], ts])
        q, qd, result, steps, switched = simulate_independent(
            model, q0, qd0, ts_full, option=formulation,
            solver=diffrax.Tsit5() if solver is None else solver, rtol=rtol, atol=atol,
            max_steps=max_steps, throw=throw,
        )
        return Trajectory(ts=ts, q=q[1:], qd=qd[1:], result=result, num_steps=steps,
                          repartitioned=switched[1:])
    if not (formulation in ("null_space", "auto") or isinstance(formulation, Eliminate)):
        raise ValueError(
            "simulate: formulation must be 'null_space', 'auto', 'independent', "
            f"mb.Eliminate(rows) or mb.IndependentCoordinates(), got {formulation!r}"
        )
    if isinstance(formulation, Eliminate):
        keep_mask(model, formulation, None)  # range check of the rows at trace time

    def rhs(t, y, args):
        q, qd = y
        gamma = None if stabilization is None else stabilization.gamma(model, q, qd, t)
        if formulation == "null_space" or model.num_rows == 0:
            return qd, accelerations(model, q, qd, t, gamma=gamma)
        C = model.C(q, t)
        gamma = model.gamma(q, qd, t) if gamma is None else gamma
        keep = keep_mask(model, formulation, C)
        qdd, _ = eliminated_solve(model.mass_matrix(), model.forces(q, qd, t), C, gamma, keep)
        return qd, qdd

    sol = diffrax.diffeqsolve(
        diffrax.ODETerm(rhs),
        diffrax.Tsit5() if solver is None else solver,
        t0=t0,
        t1=t1,
        dt0=dt0,
        y0=(q0, qd0),
        saveat=diffrax.SaveAt(ts=ts),
        stepsize_controller=(
            diffrax.PIDController(rtol=rtol, atol=atol)
            if stepsize_controller is None
            else stepsize_controller
        ),
        max_steps=max_steps,
        adjoint=diffrax.RecursiveCheckpointAdjoint() if adjoint is None else adjoint,
        throw=throw,
        progress_meter=diffrax.TextProgressMeter() if progress else diffrax.NoProgressMeter(),
    )
    q, qd = sol.ys
    return Trajectory(ts=ts, q=q, qd=qd, result=sol.result, num_steps=sol.stats["num_steps"])

