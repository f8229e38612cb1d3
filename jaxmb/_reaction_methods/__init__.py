"""Reaction methods: how `reactions`, `statics` and `inverse_dynamics` pick the multipliers.

One abstract base (`_base.AbstractReactionMethod`, modelled on lineax's `AbstractLinearSolver`)
and one short module per method: `min_norm.MinNorm`, `auto.Auto`, `compliance.Compliance`;
`jaxmb._dynamics.Eliminate` (also a `simulate` formulation) is the fourth. This package imports
nothing on purpose: `_dynamics` imports the base, the methods import `_dynamics`.
"""
