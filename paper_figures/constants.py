"""The numbers the verdict rules and the tables share, each defined once: rules, notes and
captions format their text from these, so a changed threshold cannot leave a stale caption."""

# C4 (synthetic/train.h, SPEC section 4): a run has converged when both hold at the training length.
MASS_MIN = 0.9   # mean attention mass on the target set
NMSE_MAX = 0.1   # MSE / variance of the target
MIN_SEEDS_FOR_VERDICT = 3  # seeds a C4 cell needs before it can decide anything
C4_LENGTH = 64   # n of synthetic/summary.csv's runs: the head-dimension sweep's rows at this n join the rule

# C5 (SPEC section 8).
C5_TOLERANCE = 0.02  # FPA's mean test perplexity may exceed FoX's by this fraction
C5_MIN_SEEDS = 3     # fewer runs per variant leave C5 "not tested"

# C6 (SPEC section 8): "compressed to about 25%".
KEPT = 0.25           # the kept fraction the compression tables compare at
OCCUPANCY_MAX = 0.30  # the achieved occupancy that still counts as "about 25%"
LEARNED_MIN = 0.9     # full-cache accuracy at L from which a run has learned the task
LEARNED_KEYS = 20     # ... measured on at least this many keys
RUNS_NEEDED = 3       # learned FPA runs the verdict (and a trend move's interval) needs

# Cache policies in the order every table and legend lists them (unknown ones after, by name).
POLICY_ORDER = ["full", "fpa-certified", "certified", "fox-acp", "budget", "budget per head", "duo-certified",
                "duo-calibrated", "window", "h2o", "tova", "knorm", "random", "snapkv"]
