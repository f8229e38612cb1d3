"""`RESULTS`: the result codes of jaxmb, one `eqx.Enumeration`.

It extends diffrax's `RESULTS` (successful, max_steps_reached, dt_min_reached, singular,
nonlinear_divergence, ...), so `Trajectory.result` holds diffrax's codes under the same names
(`mb.RESULTS.dt_min_reached`) beside the stops jaxmb finds itself. A code's message says what
it means in general; the exception raised for it (`JaxmbError`) carries the code as `cause`
and a message naming the function, the pair or the entry.

The checks of a state have one code per reason (`nonfinite_positions`, `nonfinite_velocities`,
`inconsistent_positions`, `inconsistent_velocities`, `nonfinite_force`): the cause of the error
raised for it, and, for an initial state that `simulate(throw=False)` refuses, the member's
`Trajectory.result`.
"""

import diffrax

_REFUSED = (
    " simulate(throw=False) refuses an initial state where this happens, per batch member: its "
    "`Trajectory.result` is this code and nothing is integrated (t_stop = t0, the saved states "
    "are inf); rerun that member with throw=True for the message naming the {}."
)


class RESULTS(diffrax.RESULTS):  # pyright: ignore[reportGeneralTypeIssues]
    nonfinite_positions = (
        "A coordinate of the state (q; simulate's q0) is nan or inf: give finite coordinates."
        + _REFUSED.format("entry (its body and component)")
    )
    nonfinite_velocities = (
        "A velocity of the state (qd; simulate's qd0) is nan or inf: give finite velocities."
        + _REFUSED.format("entry (its body and component)")
    )
    inconsistent_positions = (
        "The coordinates violate the position constraints Phi(q, t) = 0: assemble them first "
        "with mb.assemble(model, q, t)." + _REFUSED.format("pair")
    )
    inconsistent_velocities = (
        "The velocities violate the velocity constraints C qd + b = 0: project them first with "
        "mb.consistent_velocity(model, q, qd, t)." + _REFUSED.format("pair")
    )
    nonfinite_force = (
        "An applied force is nan or inf: check the force element's parameters and its drive "
        "function." + _REFUSED.format("element")
    )
    singular_configuration = (
        "A singular configuration was reached: rows of C became dependent (the rank of C "
        "drops), so the constrained motion cannot go on in this formulation."
    )
    not_removable = (
        "The eliminated rows are not a removable set at this configuration: the rows kept "
        "must be independent and span the rows of C."
    )
    singular_system = "The rows kept leave a singular augmented system."


def as_result(item: diffrax.RESULTS | RESULTS) -> RESULTS:
    """The code as one of `RESULTS` (diffrax's own codes are promoted)."""
    return item if isinstance(item, RESULTS) else RESULTS.promote(item)
