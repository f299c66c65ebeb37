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

from workbench.report.assets import CSS  # noqa: F401
from workbench.report.build import build, command_for, overrides  # noqa: F401
from workbench.report.export import (  # noqa: F401
    GateFailed,
    export_html,
    external_references,
    finish,
    notebook_fragments,
    page,
    render,
    title_for,
    vega_bundle,
)
from workbench.report.figures import FIGURES, _json_script, chart, chart_spec, figure, make_figure, save_figure  # noqa: F401
from workbench.report.formats import interval, num, p_is, pct, pval, signed  # noqa: F401
from workbench.report.kernel import execute, notebook_path  # noqa: F401
from workbench.report.markup import Html, badge, details, esc, join, para, table, tag  # noqa: F401
from workbench.report.model import BUCKET_MEANING, ROWS_LISTED, SECTIONS, STATUS_CLASS, VERDICT_CLASS, VERSIONED, Report  # noqa: F401
from workbench.report.prose import leads, limits  # noqa: F401
from workbench.report.provenance import git_commit, results_sha256, versions  # noqa: F401
from workbench.report.queries import contrast_verdict, headline_contrasts, pooled_cells, pooled_offsets  # noqa: F401
from workbench.report.sections import header, heading  # noqa: F401
from workbench.report.tables import (  # noqa: F401
    census_tables,
    claims_table,
    contrasts_table,
    ledger_tables,
    limits_list,
    methods_table,
    offsets_tables,
    provenance_tables,
    published_cells,
    published_rules_table,
    published_table,
    rows_appendix,
    scorecard_tables,
)
