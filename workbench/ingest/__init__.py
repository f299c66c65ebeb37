"""Ingest: raw lines -> the row table with its ledger.

Formats and their detection (``detect``, ``formats``, ``tabular``), the columnar JSONL reader
(``engine``), the reader that classifies every line into one ledger bucket and marks
duplicates and conflicts (``reader``, spilling to disk past memory: ``spill``), where it runs
(``execute``: this process, ``--jobs`` processes or a Dask cluster), the plan and the ledger
(``ledger``), and what every later stage shares: the selections of rows and compared pairs
(``selection``) and the unit of independence (``clusters``).
"""
