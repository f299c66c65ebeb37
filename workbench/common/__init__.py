"""Foundation: what every layer above uses and which imports nothing above it.

Errors and their exit codes (``errors``), text made safe for a terminal (``text``), number
formatting (``numbers``), the vocabularies (``vocab``, ``methods``), the stage-table schemas
(``schemas``), the canonical JSON writer (``results``), input-file and output-folder checks
(``files``, ``outdir``) and the Config with its presets (``config``).
"""
