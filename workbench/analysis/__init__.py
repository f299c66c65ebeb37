"""Analyses: the stages that turn the reduced tables into findings.

The census of nulls (``census``), the scorecard with valid n (``scorecard``), paired judge
offsets and variant contrasts (``paired``), rank intervals (``ranks``), the published-number
and headline checks (``check``), provenance and name checks (``provenance``, ``names``), each
harness's own figure (``harness``), the answer-first board (``board``), and the judge
diagnostics: length (``length``), self-preference (``selfpref``), judge versus human
(``human``).
"""
