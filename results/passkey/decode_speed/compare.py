"""Before/after table of the passkey decode-time runs in this folder (see README.md).

Prints, per checkpoint and cell, accuracy and occupancy before and after (they must agree) and
decode CPU ms per token before, after, their ratio, and after / after-full at the same length.
"""
import csv
import pathlib
import sys

HERE = pathlib.Path(__file__).parent


def rows(name):
    with open(HERE / name) as f:
        return list(csv.DictReader(f))


def main():
    ok = True
    print("run,eval_len,policy,per_head,accuracy_before,accuracy_after,occupancy_before,"
          "occupancy_after,cpu_ms_before,cpu_ms_after,speedup,after_over_after_full")
    for before_file in sorted(HERE.glob("before-*.summary.csv")):
        run = before_file.name[len("before-"):-len(".summary.csv")]
        before, after = rows(before_file.name), rows(f"after-{run}.summary.csv")
        full = {r["eval_len"]: float(r["decode_cpu_ms_per_token"])
                for r in after if r["policy"] == "full"}
        for b, a in zip(before, after):
            same = all(b[c] == a[c] for c in ("eval_len", "policy", "per_head", "accuracy",
                                              "occupancy"))
            ok = ok and same
            tb, ta = float(b["decode_cpu_ms_per_token"]), float(a["decode_cpu_ms_per_token"])
            print(f"{run},{b['eval_len']},{b['policy']},{b['per_head']},{b['accuracy']},"
                  f"{a['accuracy']},{float(b['occupancy']):.4f},{float(a['occupancy']):.4f},"
                  f"{tb:.3f},{ta:.3f},{tb / ta:.2f},{ta / full[a['eval_len']]:.2f}")
    if not ok:
        print("MISMATCH: accuracy or occupancy differ between before and after", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
