"""Layer 6, the user-facing analyses: `assemble`, `velocity` (consistent velocities,
kinematics), `accelerations`, `simulate`, `reactions` (statics, inverse dynamics),
`solvability` (and its text `report`) and `friction` (the coupled friction solve)."""
