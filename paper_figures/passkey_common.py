"""What the passkey modules share (passkey.py, passkey_verdict.py, passkey_scale.py): how a CSV
row's cache policy is labelled, and the order policies and runs are listed in."""
import math

import style
from common import num
from constants import POLICY_ORDER


def policy_name(row):
    """A readable policy label from a CSV row: 'budget 25%', 'budget 25% per head',
    'fpa-certified eps=0.001', 'window 25%', 'h2o 10%', 'full'."""
    policy, b = row["policy"], num(row.get("budget", ""))
    name = policy
    budgeted = policy != "full" and not math.isnan(b) and b > 0
    if budgeted:
        name = f"{policy} {b:g}" if b >= 1 else f"{policy} {b:.0%}"
    if policy == "budget" and str(row.get("per_head", "")).lower() in ("1", "true", "yes"):
        name += " per head"
    if policy != "full" and not budgeted and row.get("epsilon", "") not in ("", None):
        name += f" eps={num(row['epsilon']):g}"
    return name


def policy_sort(p):
    base = p.split(" ")[0]
    return (POLICY_ORDER.index(base) if base in POLICY_ORDER else len(POLICY_ORDER), p)


def run_sort(run):
    return (style.variant_sort_key(run["variant"]), run["run"])


def keys_at_8l(rows):
    """The n_keys of the rows evaluated at 8x their training length."""
    return {int(num(r["n_keys"], 0)) for r in rows
            if int(num(r["train_len"], 0)) and int(num(r["eval_len"], 0)) == 8 * int(num(r["train_len"], 0))}


def keys_text(counts):
    """'50', or '20/50' when cells were measured on different numbers of keys."""
    return "/".join(str(k) for k in sorted(counts))


def fractions_text(values, last=", "):
    """Kept fractions as the rows give them: '0.1, 0.25, 0.5' (or '0.1 and 0.25' with last=' and ')."""
    shown = [f"{v:g}" for v in sorted(values)]
    return last.join([", ".join(shown[:-1]), shown[-1]]) if len(shown) > 1 else "".join(shown)
