"""The report: display tables, generated sentences, provenance and the papermill render.

The notebook (``notebooks/reanalysis.ipynb``) only calls the functions re-exported here and
displays what they return. The package never computes a statistic nor makes a judgment:
every number and every verdict, gate or confounding flag comes from the results document of
:func:`workbench.document.pipeline.run` (``Analysis.doc``).

One module per concern:

* :mod:`.markup`: HTML primitives (:class:`Html`, :func:`esc`, :func:`table` ...); safe by
  construction: text enters HTML only through :func:`esc`;
* :mod:`.formats`: number formats;
* :mod:`.model`: the :class:`Report` object and shared constants;
* :mod:`.build`: :func:`build` runs the analysis the way ``workbench report`` does;
* :mod:`.queries`: selections on the results document;
* :mod:`.prose`: the lead sentences and the limits;
* :mod:`.provenance`: hashes, versions, git commit;
* :mod:`.sections`: the header and section headings;
* :mod:`.tables`: the section tables;
* :mod:`.figures`: matplotlib figures and Vega-Lite charts;
* :mod:`.kernel`: papermill execution in this interpreter's kernel;
* :mod:`.export`: the offline HTML export and :func:`render`;
* :mod:`.assets`: ``assets/report.css``, ``assets/embed.js``, ``assets/report.html.j2``.
"""

from __future__ import annotations

import importlib
from typing import Any

# The names below are re-exported from their modules, each imported when first asked for
# (PEP 562): ``workbench analyze`` prints the report's sentences (prose) without importing
# matplotlib and the HTML export (0.37 s of every run, measured at 1M generated rows).
_EXPORTS: dict[str, str] = {
    "CSS": "assets",
    "GateFailed": "export",
    "export_html": "export",
    "external_references": "export",
    "finish": "export",
    "notebook_fragments": "export",
    "page": "export",
    "render": "export",
    "title_for": "export",
    "vega_bundle": "export",
    "FIGURES": "figures",
    "_json_script": "figures",
    "chart": "figures",
    "chart_spec": "figures",
    "figure": "figures",
    "make_figure": "figures",
    "save_figure": "figures",
    "interval": "formats",
    "num": "formats",
    "p_is": "formats",
    "pct": "formats",
    "pval": "formats",
    "signed": "formats",
    "execute": "kernel",
    "notebook_path": "kernel",
    "Html": "markup",
    "badge": "markup",
    "details": "markup",
    "esc": "markup",
    "join": "markup",
    "para": "markup",
    "table": "markup",
    "tag": "markup",
    "BUCKET_MEANING": "model",
    "ROWS_LISTED": "model",
    "SECTIONS": "model",
    "STATUS_CLASS": "model",
    "VERDICT_CLASS": "model",
    "VERSIONED": "model",
    "Report": "model",
    "leads": "prose",
    "limits": "prose",
    "git_commit": "provenance",
    "results_sha256": "provenance",
    "versions": "provenance",
    "contrast_verdict": "queries",
    "headline_contrasts": "queries",
    "pooled_cells": "queries",
    "pooled_offsets": "queries",
    "header": "sections",
    "heading": "sections",
    "census_tables": "tables",
    "claims_table": "tables",
    "contrasts_table": "tables",
    "ledger_tables": "tables",
    "limits_list": "tables",
    "methods_table": "tables",
    "offsets_tables": "tables",
    "provenance_tables": "tables",
    "published_cells": "tables",
    "published_rules_table": "tables",
    "published_table": "tables",
    "rows_appendix": "tables",
    "scorecard_tables": "tables",
}

# ``build`` is also the name of its module: imported here, so that the submodule's import
# (which sets the package's attribute ``build`` to the module) is followed by the function's
# (build.py imports no figure module: no matplotlib)
from workbench.report.build import build, command_for, overrides  # noqa: E402, F401

__all__ = sorted(n for n in [*_EXPORTS, "build", "command_for", "overrides"] if not n.startswith("_"))


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        # a submodule (report.export, report.plots...), as the eager package gave them
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
        return value
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # found directly from now on
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})

