"""Shared look of every figure: one colour per attention variant, readable sizes, and saving
PNG + PDF with fixed metadata so that rerunning on the same CSVs gives the same files."""
import os

os.environ.setdefault("SOURCE_DATE_EPOCH", "0")  # PDF timestamps fixed: git diff shows real changes

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# One colour per variant, everywhere (colour-blind-safe Okabe-Ito palette).
VARIANT_COLOURS = {
    "softmax": "#0072B2",      # blue (synthetic/kernels softmax, LM "transformer" shares it)
    "transformer": "#0072B2",
    "softmax-nope": "#56B4E9",  # light blue
    "fox": "#E69F00",          # orange
    "fpa": "#009E73",          # green
}
OTHER_COLOURS = ["#CC79A7", "#D55E00", "#F0E442", "#000000", "#999999"]

VARIANT_LABELS = {
    "softmax": "softmax",
    "transformer": "Transformer (softmax+RoPE)",
    "softmax-nope": "softmax (NoPE)",
    "fox": "FoX",
    "fpa": "FPA",
}

SHORT_LABELS = {"transformer": "Transformer", "softmax-nope": "softmax NoPE"}


def short_label(variant):
    return SHORT_LABELS.get(variant, label(variant))


VARIANT_ORDER = ["transformer", "softmax", "softmax-nope", "fox", "fpa"]

# Line styles distinguish things that are not variants (implementation, policy, backward mode).
LINESTYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "P", "X"]

plt.rcParams.update({
    "figure.dpi": 110,
    "savefig.dpi": 150,
    "font.size": 10,
    "axes.titlesize": 10,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "xtick.labelsize": 9,
    "ytick.labelsize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.axisbelow": True,
    "svg.hashsalt": "fpa",
})


def colour(variant):
    """The variant's colour; a labelled sibling such as 'fox-b5' (FoX with another gate bias)
    gets a darker shade of its base variant's colour, anything else a fixed spare colour."""
    if variant in VARIANT_COLOURS:
        return VARIANT_COLOURS[variant]
    for base in sorted(VARIANT_COLOURS, key=len, reverse=True):
        if variant.startswith(base + "-"):
            from matplotlib.colors import to_rgb
            return tuple(0.6 * c for c in to_rgb(VARIANT_COLOURS[base]))
    return OTHER_COLOURS[hash_index(variant, len(OTHER_COLOURS))]


def label(variant):
    if variant in VARIANT_LABELS:
        return VARIANT_LABELS[variant]
    for base in sorted(VARIANT_LABELS, key=len, reverse=True):
        if variant.startswith(base + "-"):
            return VARIANT_LABELS[base] + " [" + variant[len(base) + 1:] + "]"
    return variant


def hash_index(text, n):
    # Deterministic (Python's hash() is salted per process).
    return sum(ord(c) for c in str(text)) % n


def variant_sort_key(variant):
    base = variant if variant in VARIANT_ORDER else variant.split("-")[0]
    return (VARIANT_ORDER.index(base) if base in VARIANT_ORDER else len(VARIANT_ORDER), variant)


def save(fig, out_dir, name):
    """Writes <name>.png and <name>.pdf; returns the PNG's file name (relative to out_dir)."""
    os.makedirs(out_dir, exist_ok=True)
    fig.savefig(os.path.join(out_dir, name + ".png"), metadata={"Software": None}, bbox_inches="tight")
    fig.savefig(os.path.join(out_dir, name + ".pdf"),
                metadata={"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None},
                bbox_inches="tight")
    plt.close(fig)
    return name + ".png"
