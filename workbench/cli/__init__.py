"""Commands: ``workbench analyze | check | report | batch | synth | selftest | calibrate | preset``.

The dispatcher (``main``; ``check``, ``report`` and ``batch`` are loaded by name) and the
self-test (``selftest``).
"""
