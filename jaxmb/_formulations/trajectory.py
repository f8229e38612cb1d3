"""`Trajectory`: the saved states of a simulation (what `simulate` returns and `reactions`
accepts)."""

import equinox as eqx
from jaxtyping import Array, Bool, Float, Int

from .._runtime.results import RESULTS, as_result


class Trajectory(eqx.Module):
    """Saved states of a simulation: `ts` (T,), `q` and `qd` (T, n); `result` is the result
    code (`mb.RESULTS`: diffrax's codes and jaxmb's; `success` True when the integration
    reached t1). With throw=False an initial state that would raise is refused instead, and
    `result` says why: `mb.RESULTS.nonfinite_positions` (q0), `nonfinite_velocities` (qd0),
    `inconsistent_positions` (q0 off the position constraints: call `mb.assemble`),
    `inconsistent_velocities` (qd0 off the velocity constraints: call
    `mb.consistent_velocity`) or `nonfinite_force` (an applied force at the initial state);
    nothing is integrated for it (t_stop = t0, saved states inf). Under vmap `result` holds one
    code per member: `traj.result == mb.RESULTS.inconsistent_positions` is a boolean per
    member, `mb.RESULTS[traj.result]` their messages; rerun a refused member with throw=True
    for the message naming the entry or the pair.
    `repartitioned` (T,) marks
    the saved instants where the independent-coordinate formulation changed its partition
    (None for the other formulations). `t_stop` is the time the integration reached (t1 on
    success; saved states after it are inf) and `singular` says whether it stopped at a
    singular configuration (a rank drop of C that the formulation cannot pass); both None where
    not integrated. `t_passage` is the time of the first singular passage of the
    null-space and eliminated formulations (inf if none; see `mb.SingularPassageWarning`), where
    they may switch branch; None for the projection and independent formulations.

    Shapes: `T` saved times, `n` coordinates; `*batch` is empty for one simulation and the
    leading axes of a vmapped one (`mb.batch.map`, `jax.vmap(mb.simulate)`)."""

    ts: Float[Array, "*batch T"]
    q: Float[Array, "*batch T n"]
    qd: Float[Array, "*batch T n"]
    result: RESULTS = eqx.field(converter=as_result)
    num_steps: Int[Array, " *batch"]
    repartitioned: Bool[Array, "*batch T"] | None = None
    t_stop: Float[Array, " *batch"] | None = None
    singular: Bool[Array, " *batch"] | None = None
    t_passage: Float[Array, " *batch"] | None = None

    @property
    def success(self) -> Bool[Array, " *batch"]:
        return self.result == RESULTS.successful
