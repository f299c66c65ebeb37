"""Rank intervals: which ranks the data allow each measured cell, from the variant contrasts.

A mean order is not a ranking: two cells whose contrast shows no clear difference could be in either order.
The rank interval of a measured pooled headline cell ``v`` among the ``N`` measured cells is

    rank_low  = 1 + #{u : the contrast of u and v is Holm-significant with u higher}
    rank_high = N - #{u : the contrast of u and v is Holm-significant with v higher}

computed from the all-scenario contrasts on the headline (``paired.contrasts``, the calls
of ``paired.contrast_call``: ``holm_significant`` and ``higher``). Holm controls the
familywise error over the whole contrast family, so the intervals hold simultaneously: with
probability at least 1 - alpha (when every test is valid) no cell's true rank lies outside
its interval. ``rank_distinguishable`` is true only when the interval is a single rank
(``rank_low == rank_high``): every other measured cell is separated from ``v``; otherwise the
cell is "not distinguishable" from the cells in ``tied_with`` and the ranks it may take are
``rank_low..rank_high``. A pair with no contrast computed (configured ``contrasts``, or a
selection capped for many variants) counts as not separated, so ranks are never sharper
than the contrasts that were computed (``pairs_compared`` of ``pairs_possible``).

``tied_with`` and ``not_compared`` name up to ``measured - 1`` cells each, for each cell: N**2
names in all (25 million at 5,000 variants, most of a 1 GB results.json). Above
:data:`LIST_LIMIT` measured cells they are null for every cell (the ranks are still computed;
``above``/``below`` stay listed, at most two names per computed contrast): ``tied_with`` is then
every measured cell not in ``above``/``below``, ``not_compared`` those of them without a contrast.

Cells that are not ``measured`` get no rank at all (null), whatever their mean. This is the
pairwise-comparison construction of simultaneous rank confidence sets (Mogstad, Romano,
Shaikh & Wilhelm 2024, Review of Economic Studies 91(1)) with Holm as the multiple test.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import polars as pl

from workbench.common import schemas

BASIS = "holm_contrasts"
LIST_LIMIT = 500
"""Most measured cells whose ``tied_with``/``not_compared`` lists are written (see the module
docstring): 500 cells are at most 2 x 249,500 names."""


@dataclass(frozen=True)
class RankIntervals:
    """The ranks stage: ``cells`` (the :data:`workbench.common.schemas.RANKS` table) and what the
    intervals rest on (results.json ``ranks``: these fields and the cells' records)."""

    field: str
    alpha: float
    measured: int
    pairs_possible: int
    pairs_compared: int
    cells: pl.DataFrame
    basis: str = BASIS

    @property
    def complete(self) -> bool:
        return self.pairs_compared == self.pairs_possible


def rank_intervals(scorecard: pl.DataFrame, contrasts: pl.DataFrame,
                   headline: str, alpha: float) -> RankIntervals:
    """The rank intervals of the pooled headline cells (see the module docstring for the
    definition), from the scorecard and contrasts tables.

    ``cells``: one row per pooled headline cell (judges pooled, all scenarios), measured
    cells by mean (highest first, then name) and then the rest by name: ``{variant, status,
    mean, rank_low, rank_high, rank_distinguishable, above, below, tied_with, not_compared}``
    where ``above``/``below`` name the cells significantly above/below it, ``tied_with`` the
    measured cells it is not separated from and ``not_compared`` those of them with no
    contrast computed (both null for every cell above :data:`LIST_LIMIT` measured cells).
    Every rank key is null for a cell that is not measured.
    """
    pooled = scorecard.filter(pl.col("judge").is_null() & pl.col("subset").is_null()
                              & (pl.col("field") == headline)).select("variant", "status", "mean").to_dicts()
    measured = sorted((c for c in pooled if c["status"] == "measured"),
                      key=lambda c: (-c["mean"], str(c["variant"])))
    others = sorted((c for c in pooled if c["status"] != "measured"), key=lambda c: str(c["variant"]))
    names = [str(c["variant"]) for c in measured]
    inside = set(names)
    calls: dict[frozenset[str], tuple[bool | None, str | None]] = {}
    headline_contrasts = contrasts.filter(pl.col("subset").is_null() & pl.col("judge").is_null()
                                          & (pl.col("field") == headline))
    for a, b, sig, higher in headline_contrasts.select("a", "b", "holm_significant", "higher").iter_rows():
        a, b = str(a), str(b)
        if a == b or a not in inside or b not in inside:
            continue
        calls.setdefault(frozenset((a, b)), (sig, higher))
    above: dict[str, list[str]] = {v: [] for v in names}
    below: dict[str, list[str]] = {v: [] for v in names}
    for pair, (sig, higher) in calls.items():
        if not sig or higher is None:
            continue
        hi = str(higher)
        (lo,) = pair - {hi}
        above[lo].append(hi)
        below[hi].append(lo)
    n = len(names)
    listed = n <= LIST_LIMIT
    order = {u: i for i, u in enumerate(names)}
    cells = []
    for v, c in zip(names, measured, strict=True):
        low, high = 1 + len(above[v]), n - len(below[v])
        tied = not_compared = None
        if listed:
            separated = set(above[v]) | set(below[v])
            tied = [u for u in names if u != v and u not in separated]
            not_compared = [u for u in tied if frozenset((u, v)) not in calls]
        cells.append({
            "variant": c["variant"], "status": c["status"], "mean": c["mean"],
            "rank_low": low, "rank_high": high, "rank_distinguishable": low == high,
            # in the cells' order: sorting the few names, not scanning every name per cell
            "above": sorted(above[v], key=order.__getitem__), "below": sorted(below[v], key=order.__getitem__),
            "tied_with": tied, "not_compared": not_compared,
        })
    for c in others:
        cells.append({"variant": c["variant"], "status": c["status"], "mean": c["mean"],
                      "rank_low": None, "rank_high": None, "rank_distinguishable": None,
                      "above": None, "below": None, "tied_with": None, "not_compared": None})
    return RankIntervals(field=headline, alpha=alpha, measured=n, pairs_possible=n * (n - 1) // 2,
                         pairs_compared=len(calls), cells=schemas.frame(cells, schemas.RANKS))


def rank_label(cell: dict[str, Any] | None, dash: str = "-") -> str:
    """``"2"`` for a distinguishable rank, ``"1-3"`` for an interval, ``"-"`` unranked."""
    if cell is None or cell.get("rank_low") is None:
        return "-"
    lo, hi = cell["rank_low"], cell["rank_high"]
    return str(lo) if lo == hi else f"{lo}{dash}{hi}"


def by_variant(ranks: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The ``ranks`` cells keyed by variant name (empty when the document has none)."""
    return {str(c["variant"]): c for c in (ranks or {}).get("cells", [])}


def basis_text(ranks: dict[str, Any] | None) -> str:
    """One sentence saying what the ranks rest on, for captions and the terminal."""
    if not ranks:
        return "no ranks computed"
    n, done, possible = ranks["measured"], ranks["pairs_compared"], ranks["pairs_possible"]
    text = (f"intervals from the Holm-adjusted contrasts at alpha {ranks['alpha']:g} "
            f"(simultaneous over the family): a cell ranks above another only where their "
            f"contrast separates them")
    if n > 1 and not ranks["complete"]:
        text += (f"; based on the {done} of {possible} pairs of measured cells with a contrast computed, "
                 "a pair without one counts as not separated")
    return text
