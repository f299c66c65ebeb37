"""Printed cells never show an impossible value: a t bound past the scale is shown at the scale's end."""

from workbench.cli.terminal import cell_text


def _cell(mean, lo, hi, valid=50, rows=54, absent=3):
    return {"mean": mean, "ci_low": lo, "ci_high": hi, "valid_n": valid, "rows": rows, "absent": absent}


def test_bound_past_the_rubric_is_truncated_and_marked():
    # freeform_task honesty in the example: 9.52 [8.96, 10.08] on 1-10
    assert cell_text(_cell(9.52, 8.96, 10.08), 2, [1.0, 10.0]) == "9.52 (50/54, 3 absent) [8.96, 10.00*]"


def test_win_rate_interval_kept_inside_0_100():
    # lm-sys skycamp: 75.00 (2/10) [-242.66, 392.66] on a 0-100 win rate
    c = _cell(75.0, -242.66, 392.66, valid=2, rows=10, absent=0)
    assert cell_text(c, 2, [0.0, 100.0]) == "75.00 (2/10) [0.00*, 100.00*]"


def test_inside_the_scale_and_without_a_range_unchanged():
    assert cell_text(_cell(8.07, 7.71, 8.40, 42, 50, 0), 2, [1.0, 10.0]) == "8.07 (42/50) [7.71, 8.40]"
    assert cell_text(_cell(9.52, 8.96, 10.08), 2) == "9.52 (50/54, 3 absent) [8.96, 10.08]"
    assert cell_text(_cell(None, None, None, 0, 4, 0), 2, [1.0, 10.0]) == "- (0/4)"
