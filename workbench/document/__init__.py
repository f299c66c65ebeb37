"""The run and its document: inputs + config -> every stage -> the results document.

The pipeline (``pipeline``: :func:`~workbench.document.pipeline.run`, shared by the CLI and the
notebook), the results document built from the stage tables (``build``), the analyst's API
(``api``) and what every command does with its arguments (``cliargs``: config, early checks,
outputs, exit codes).
"""
