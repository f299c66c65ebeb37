"""Simulation: planted truth for checking the statistics.

The synthetic sweep generator (``synth``), the calibration of intervals and tests by
simulation (``calibrate``, ``calibrate_grid``, ``calibrate_judges``) and the embedded example
(``example``: ``python -m workbench.sim.example OUTDIR``).
"""
