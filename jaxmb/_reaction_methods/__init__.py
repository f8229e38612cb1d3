"""Reaction methods: how `reactions`, `statics` and `inverse_dynamics` pick the multipliers.

One abstract base (`_base.AbstractReactionMethod`, modelled on lineax's `AbstractLinearSolver`)
and one short module per method: `min_norm.MinNorm`, `auto.Auto`, `compliance.Compliance`,
`eliminate.Eliminate`. `Eliminate` and `Auto` are `simulate` formulations too (they subclass
`jaxmb._formulations.base.AbstractStateFormulation`, the layer below). This package's
`__init__` imports nothing, so a method module can be imported alone.
"""
