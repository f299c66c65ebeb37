"""The report object and the constants every section shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from workbench.common import config as config_mod

#: Sections in report order: (anchor, title).
SECTIONS: tuple[tuple[str, str], ...] = (
    ("provenance", "Provenance"),
    ("ledger", "Ledger: every line accounted for"),
    ("census", "Null census"),
    ("scorecard", "Scorecard"),
    ("published", "Published vs recomputed"),
    ("offsets", "Judge offsets"),
    ("contrasts", "Variant contrasts"),
    ("claims", "Claims"),
    ("methods", "Methods"),
    ("limits", "Limits"),
    ("rows", "Appendix: the rows"),
)

#: Packages whose versions the provenance section lists.
VERSIONED = (
    "workbench",
    "polars",
    "numpy",
    "scipy",
    "statsmodels",
    "krippendorff",
    "pandas",
    "pyarrow",
    "msgspec",
    "matplotlib",
    "altair",
    "vl-convert-python",
    "papermill",
    "nbconvert",
    "ipykernel",
)

BUCKET_MEANING = {
    "blank": "empty line; not a judgment",
    "valid": "headline score present and usable: the only rows that enter a mean",
    "partial": "row present, headline score absent or null (other fields present)",
    "empty": "only the key fields: no score at all",
    "unscored": "a harness log's sample with no value from the scorer (its reason kept)",
    "errored": "a harness log's sample that ended in an error (its reason kept)",
    "non_numeric": "headline is text that is not a number (e.g. '8/10')",
    "out_of_range": "headline is a number outside the rubric",
    "invalid_number": "headline is NaN or Infinity",
    "malformed": "not a usable JSON object (truncated, not JSON, keys missing); keys untrusted",
    "duplicate": "exact repeat of an earlier row; counted once",
    "conflict": "same key as another row with different content; every copy held out",
    "missing_planned": "planned judgment with no row in any input (beside the lines)",
}

VERDICT_CLASS = {
    "holds": "good",
    "shrinks": "warn",
    "reverses": "bad",
    "refuted": "bad",
    "inconclusive": "warn",
    "equivalent": "neutral",
    "insufficient": "muted",
}
STATUS_CLASS = {"measured": "good", "insufficient": "warn", "not_measured": "muted"}
ROWS_LISTED = 1000


@dataclass
class Report:
    """One analysis with what the report needs beside it (parameters, output folder, command)."""

    analysis: Any
    parameters: dict[str, Any]
    out_dir: Path
    command_line: str
    leads: dict[str, str] = field(default_factory=dict)
    no_gate: bool = False
    kernel_start: int | None = None

    @property
    def doc(self) -> dict[str, Any]:
        return self.analysis.doc  # type: ignore[no-any-return]

    @property
    def cfg(self) -> config_mod.Config:
        return self.analysis.config  # type: ignore[no-any-return]

    @property
    def headline(self) -> str:
        return str(self.doc["config"]["headline"])

    @property
    def figures_dir(self) -> Path:
        return self.out_dir / "figures"


