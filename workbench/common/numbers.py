"""JSON number literals past the float range: what they were, not "inf" (foundation layer)."""

from __future__ import annotations

import math


class BeyondFloat(float):
    """A JSON number literal past the float range (an integer of 400 or 5,000 digits, ``1e400``):
    +-inf as a float, with ``what`` saying what the literal was. It is ``out_of_range`` (a finite
    number, outside every rubric), never ``invalid_number`` (which is NaN and Infinity, not
    numbers), and its reason shows ``what`` instead of "inf"."""

    what: str

    def __new__(cls, negative: bool, what: str) -> BeyondFloat:
        obj = super().__new__(cls, float("-inf") if negative else float("inf"))
        obj.what = what
        return obj


def beyond_int(text: str) -> str:
    digits = len(text.lstrip("+-"))
    return f"{'a negative' if text.startswith('-') else 'an'} integer of {digits} digits (beyond the float range)"


def parse_int(text: str) -> int | float:
    """JSON integers for the slow path: one with more digits than Python converts (4,300) is a
    :class:`BeyondFloat` (out of every rubric, as is one of 400 digits or ``1e400``)."""
    try:
        return int(text)
    except ValueError:
        return BeyondFloat(text.startswith("-"), beyond_int(text))


def parse_float(text: str) -> float:
    """JSON decimals for the slow path: one past the float range (``1e400``) is a
    :class:`BeyondFloat`, not inf."""
    f = float(text)
    if math.isinf(f):
        return BeyondFloat(f < 0, f"{text if len(text) <= 24 else text[:21] + '...'} (beyond the float range)")
    return f
