# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] tags=["notebook-only"]
# # Reanalysis report
#
# `workbench report INPUT... --out DIR` runs this notebook with papermill and exports
# `DIR/report.html` with the code hidden. To work by hand, set the parameters below and run
# all cells: every cell only calls `workbench.report` (which calls the same pipeline as
# `workbench analyze`) and displays what it returns. The figures land in `out_dir/figures/`.
# The defaults below are the embedded example, relative to this folder (JupyterLab's working
# directory for this notebook); `workbench report` always passes every parameter.

# %% tags=["parameters"]
inputs = ["../data/example/judge_rows.jsonl"]
config = "../data/example/config.yaml"
preset = None
plan = "../data/example/plan.csv"
published = "../data/example/published_scorecard.csv"
claims = "../data/example/claims.yaml"
params = []  # extra config settings as [NAME, VALUE] pairs, as `-p NAME VALUE` gives them
min_valid_n = None
min_clusters = None
confidence = None
resamples = None
seed = None
subsets = None
out_dir = "../reports/notebook"
command_line = None

# %%
import workbench.report as wr

R = wr.build(inputs=inputs, config=config, preset=preset, plan=plan, published=published, claims=claims,
             params=params, min_valid_n=min_valid_n, min_clusters=min_clusters, confidence=confidence,
             resamples=resamples, seed=seed, subsets=subsets, out_dir=out_dir, command_line=command_line)
wr.header(R)

# %%
wr.heading(R, "provenance")

# %%
wr.provenance_tables(R)

# %%
wr.heading(R, "ledger")

# %%
wr.ledger_tables(R)

# %%
wr.heading(R, "census")

# %%
wr.chart(R, "missing_heatmap")

# %%
wr.census_tables(R)

# %%
wr.heading(R, "scorecard")

# %%
wr.chart(R, "scorecard_forest")

# %%
wr.scorecard_tables(R)

# %%
wr.heading(R, "published")

# %%
wr.figure(R, "published_dumbbell")

# %%
wr.published_table(R)

# %%
wr.heading(R, "offsets")

# %%
wr.figure(R, "offset_histograms")

# %%
wr.offsets_tables(R)

# %%
wr.heading(R, "contrasts")

# %%
wr.figure(R, "contrasts")

# %%
wr.contrasts_table(R)

# %%
wr.heading(R, "claims")

# %%
wr.claims_table(R)

# %%
wr.heading(R, "limits")

# %%
wr.limits_list(R)

# %%
wr.heading(R, "rows")

# %%
wr.rows_appendix(R)
