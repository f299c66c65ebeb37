"""Reduce: the row table -> small typed tables.

Sufficient statistics per (field, variant, judge, subset, scenario) and the joint cluster
bootstrap on them (``sufficient``); integer codes of row labels for the stages that group
with numpy (``codes``).
"""
