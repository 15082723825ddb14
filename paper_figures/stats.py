"""Small-sample statistics for the verdicts and the 'trend with size' lines: Student t quantiles,
the sample standard deviation, and Welch's interval for the difference of two independent means
(two presets or two shapes are trained from different seeds, so their runs are not paired)."""
import math

import common

# Student t quantiles t_{0.975, df} for 95% intervals.
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262,
        10: 2.228, 12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t975(df):
    return T975[max(k for k in T975 if k <= max(df, 1))]  # the next smaller df: a slightly wider interval


def sample_std(xs):
    m = common.mean(xs)
    return math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else math.nan


def welch_difference(before, after):
    """mean(after) - mean(before) and the half-width of its 95% Welch interval (unequal variances,
    Welch-Satterthwaite degrees of freedom, rounded down to the table); the half-width is nan with
    fewer than 2 values on a side."""
    d = common.mean(after) - common.mean(before)
    if len(before) < 2 or len(after) < 2:
        return d, math.nan
    va, vb = sample_std(before) ** 2 / len(before), sample_std(after) ** 2 / len(after)
    if va + vb == 0:
        return d, 0.0
    df = (va + vb) ** 2 / (va ** 2 / (len(before) - 1) + vb ** 2 / (len(after) - 1))
    return d, t975(df) * math.sqrt(va + vb)


def noise_text(d, half, fmt):
    """'95% Welch interval [lo, hi]: inside seed noise' (the interval contains 0) or 'outside'."""
    inside = d - half <= 0 <= d + half
    return (f"95% Welch interval [{fmt(d - half)}, {fmt(d + half)}]: "
            + ("inside seed noise" if inside else "outside seed noise"))
