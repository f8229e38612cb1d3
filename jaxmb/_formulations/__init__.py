"""Layer 4, the formulations: how `simulate` turns M qdd + C^T lambda = F, C qdd = gamma into
motion. One hook each, `integrate(model, problem) -> Trajectory` (`base`): the state
formulations share one diffrax program (`state_ode`) and supply the accelerations (`null_space`,
`projection`, `eliminated`'s solve); `independent` integrates seed 002's minimal-order
equations itself. Beside them: the initial-state checks (`start`), Baumgarte stabilization,
the singular-passage monitor (`passages`), the diagnosis of an early stop (`failures`) and the
`Trajectory` record."""
