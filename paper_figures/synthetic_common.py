"""What the synthetic study's two figure modules share (synthetic.py, synthetic_sweep.py): the
summary columns, the seeds a verdict needs, and how models and tasks are named and ordered."""
import style

SUMMARY_COLUMNS = ["task", "model", "head_dim", "seeds_run", "seeds_converged", "mass_mean",
                   "mass_std", "mass2n_mean", "nmse_mean", "nmse2n_mean"]
DUMP_COLUMNS = ["kind", "head", "i", "j", "value", "label"]
TASK_ORDER = ["dips", "brackets", "erase"]


def model_key(row):
    grad = row.get("fpa_backward", "")
    if row["model"] == "fpa" and grad and grad != "n/a":
        return f"fpa/{grad}"
    return row["model"]


def model_label(key):
    if key.startswith("fpa/"):
        return "FPA (" + key.split("/", 1)[1] + ")"
    return style.label(key)


def model_sort(key):
    base = key.split("/")[0]
    return (style.variant_sort_key(base), key)


def task_sort(task):
    return (TASK_ORDER.index(task) if task in TASK_ORDER else len(TASK_ORDER), task)
