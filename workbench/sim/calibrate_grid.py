"""The calibration grid shared by :mod:`workbench.sim.calibrate` and :mod:`workbench.sim.calibrate_judges`:
nominal levels, bands, the failure patterns and judge offsets of a grid point, and one table row."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from workbench.sim.synth import Model

CONFIDENCE = 0.95
ALPHA = 0.05
COVERAGE_BAND = (0.925, 0.975)
FPR_BAND = (0.025, 0.075)
POWER_BAND = (0.75, 0.85)
#: failure patterns: ``row`` (rows at 15 %, rates shifted per scenario, logit sd 0.8), ``item``
#: (whole items: every judge of a scenario x variant x trial), ``block`` (whole blocks: every
#: trial of a scenario x variant, independently of the variant), ``scenario`` (row rates that
#: vary strongly by scenario, logit sd 2) and ``unequal`` (unequal clusters: 1-5 trials per
#: scenario, rows at 15 %)
GRID_MISSING = ("row", "item", "block", "scenario", "unequal")
GRID_OFFSET = ("constant", "varying")


def apply_pattern(base: Model, missing: str, offset: str) -> Model:
    """``base`` with one grid point's failure pattern (:data:`GRID_MISSING`) and judge offset
    (:data:`GRID_OFFSET`: ``varying`` adds a judge offset sd 0.5 and a variant x scenario sd 0.3)."""
    if missing == "row":
        base = replace(base, missing_rates=0.15)
    elif missing == "item":
        base = replace(base, missing_rates=0.03, item_failure_rate=0.12)
    elif missing == "block":
        base = replace(base, missing_rates=0.03, block_failure_rate=0.15)
    elif missing == "scenario":
        base = replace(base, missing_rates=0.15, missing_scenario_sd=2.0)
    elif missing == "unequal":
        base = replace(base, missing_rates=0.15, trials=5, trials_min=1)
    else:
        raise ValueError(f"unknown failure pattern {missing!r}")
    if offset == "varying":
        base = replace(base, judge_offset_sd=0.5, variant_scenario_sd=0.3)
    return base


def band_row(scenarios: int, missing: str, offset: str, method: str, meta: Mapping[str, Any], sets: int,
             undefined: int, rate: float | None, mcse: float | None, note: str = "",
             conservative_up_to: int = 0, why_conservative: str = "") -> dict[str, Any]:
    """One row of the calibration table for a method without special cases: coverage in
    :data:`COVERAGE_BAND` (an interval that over-covers at ``conservative_up_to`` or fewer
    scenarios has the documented band 92.5-100 %, the reason ``why_conservative`` in the note, as
    :data:`workbench.sim.calibrate.SMALL_G_CONSERVATIVE`), a false-positive rate at most its upper side (an exact or
    conservative test below nominal - 2.5 is reported, not failed), power unbanded."""
    kind = meta["kind"]
    band: tuple[float | None, float | None] = (None, None)
    in_band = None
    if kind == "coverage":
        band = COVERAGE_BAND
        if scenarios <= conservative_up_to and rate is not None and rate > band[1]:
            band = (COVERAGE_BAND[0], 1.0)
            note = (note + "; " if note else "") + \
                f"conservative with {scenarios} scenarios{why_conservative}: documented band 92.5-100%"
        in_band = None if rate is None else bool(band[0] <= rate <= band[1])
    elif kind == "fpr":
        band = FPR_BAND
        in_band = None if rate is None else bool(rate <= band[1])
        if rate is not None and rate < band[0]:
            note = (note + "; " if note else "") + "conservative"
    return {"scenarios": scenarios, "missing": missing, "offset": offset, "method": method, "kind": kind,
            "what": meta["what"], "status": meta["status"], "headline": meta["headline"], "sets": sets,
            "undefined": undefined, "rate": rate, "mcse": mcse, "band_low": band[0], "band_high": band[1],
            "in_band": in_band, "note": note}
