"""Layer 3, the model: the built `Model` (C, b, gamma, Phi by autodiff of the elements'
residuals, `model`), its builder (`mechanism`), pairs of one type evaluated together
(`groups`), the row table (`rows`), checks of the arguments and states handed to an analysis
(`input_checks`, `arguments`, `state_checks`) and the terms of the equations of motion at a
state (`terms`)."""
