#!/usr/bin/python3
"""lm-export + lm/python/fpa_lm.py: a tiny run of every variant, exported, rebuilt in PyTorch,
gives lm-eval's validation loss on the same bytes.

Usage: test_lm_export.py BIN_DIR OPS_LIBRARY. Exit 0: pass; 77: PyTorch is not installed
(ctest SKIP); anything else: a failure.
"""
import csv
import math
import os
import random
import shutil
import subprocess
import sys
import tempfile

try:
    import torch
except ImportError:
    print("SKIP: python3-torch is not installed (PyTorch for /usr/bin/python3)")
    sys.exit(77)

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(root, "lm", "python"))
import fpa_lm  # noqa: E402

bin_dir, ops = sys.argv[1], sys.argv[2]
fpa_lm.load_ops(ops)
failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        failures.append(what)


def run(*args):
    r = subprocess.run([os.path.join(bin_dir, args[0])] + [str(a) for a in args[1:]],
                       capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


tmp = tempfile.mkdtemp(prefix="fpa-lm-export-")
try:
    # Ten documents: by lm/corpus.h's split rule doc108 is the validation split, doc109 test.
    corpus = os.path.join(tmp, "corpus")
    os.makedirs(corpus)
    rng = random.Random(5)
    words = "the cat sat on a mat and dog ran far . ,".split()
    docs = {}
    for d in range(10):
        text = " ".join(rng.choice(words) for _ in range(40 + 7 * d))
        docs[f"doc{100 + d}.txt"] = text
        with open(os.path.join(corpus, f"doc{100 + d}.txt"), "w") as f:
            f.write(text)
    validation = (docs["doc108.txt"] + "\n").encode()  # lm-eval appends '\n' to a document

    for variant in ["transformer", "softmax-nope", "fox", "fpa"]:
        run_dir, out = os.path.join(tmp, variant), os.path.join(tmp, variant + ".pt")
        rc, _, err = run("lm-train", "--preset", "tiny", "--variant", variant, "--hidden", 32,
                         "--layers", 2, "--heads", 2, "--length", 16, "--batch", 4, "--steps", 16,
                         "--warmup", 1, "--lr", 0.02, "--val-every", 8, "--val-windows", 4,
                         "--checkpoint-every", 8, "--seed", 1, "--corpus", corpus,
                         "--out-dir", run_dir)
        check(rc == 0, f"{variant}: lm-train (rc {rc}) {err.strip()[-300:] if rc else ''}")
        eval_csv = os.path.join(tmp, variant + "-eval.csv")
        rc, _, err = run("lm-eval", "--checkpoint", run_dir, "--corpus", corpus, "--out", eval_csv)
        check(rc == 0, f"{variant}: lm-eval (rc {rc}) {err.strip()[-300:] if rc else ''}")
        rc, _, err = run("lm-export", "--checkpoint", run_dir, "--out", out)
        check(rc == 0 and os.path.exists(out), f"{variant}: lm-export (rc {rc}) {err.strip()}")
        if failures:
            break
        with open(eval_csv) as f:
            row = next(r for r in csv.DictReader(f) if r["split"] == "validation")
        cpp = float(row["nll_per_token"])

        data = fpa_lm.load_exported_file(out)
        check(sorted(data) == ["config", "preset", "state_dict", "step"] and data["step"] == 16
              and data["preset"] == "tiny", f"{variant}: exported dict has config, state_dict, step 16, preset")
        for impl in ["reference", "fused"]:
            model = fpa_lm.load_exported(out, impl)  # load_state_dict(strict=True) inside
            total, count = fpa_lm.nll_of_bytes(model, validation)
            py = total / count
            check(count == int(row["tokens"]) and abs(py - cpp) < 1e-5,
                  f"{variant}/{impl}: PyTorch loss {py:.7f} vs lm-eval {cpp:.7f} "
                  f"(diff {abs(py - cpp):.1e}), {count} bytes vs {row['tokens']}")
        # Not a constant model: the loss moved from log(256) = 5.545 in 16 steps.
        check(cpp < math.log(256) - 0.05, f"{variant}: trained loss {cpp:.4f} below log 256")

        # Gradients reach every parameter through torch.ops.fpa.attention.
        model = fpa_lm.load_exported(out, "fused")
        tokens = torch.tensor(list(validation[:17]), dtype=torch.long).unsqueeze(0)
        loss = torch.nn.functional.cross_entropy(model(tokens[:, :-1])[0], tokens[0, 1:])
        loss.backward()
        missing = [n for n, p in model.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()
                   or p.grad.abs().max() == 0]
        check(not missing, f"{variant}: every parameter gets a finite non-zero gradient {missing}")

    # Python's RoPE is the operator library's.
    x = torch.randn(1, 2, 5, 8, dtype=torch.float64)
    check(torch.allclose(fpa_lm.rope(x, 3, 500.0), torch.ops.fpa.apply_rope(x, 3, 500.0), atol=1e-12),
          "fpa_lm.rope equals fpa::apply_rope")

    # The example script, as the README runs it.
    out = os.path.join(tmp, "fpa.pt")
    if os.path.exists(out):
        r = subprocess.run([sys.executable, os.path.join(root, "lm", "python", "loss_example.py"),
                            out, docs["doc108.txt"] + "\n", "--ops", ops], capture_output=True, text=True)
        want = fpa_lm.mean_loss(fpa_lm.load_exported(out), validation)
        check(r.returncode == 0 and f"loss {want:.6f} nats/byte" in r.stdout,
              f"loss_example.py prints the loss: {r.stdout.strip()} {r.stderr.strip()[-300:]}")

    # Bad input: one line, exit 2.
    for args, needle in [(["--out", os.path.join(tmp, "x.pt")], "--checkpoint is required"),
                         (["--checkpoint", os.path.join(tmp, "nothing"), "--out", os.path.join(tmp, "x.pt")],
                          "names no checkpoint"),
                         (["--checkpoint", os.path.join(tmp, "fpa")], "--out is required")]:
        rc, _, err = run("lm-export", *args)
        check(rc == 2 and err.count("\n") == 1 and err.startswith("error: ") and needle in err,
              f"lm-export {' '.join(args[:1])}...: exit {rc}, {err.strip()}")
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print(f"{len(failures)} failure(s)")
sys.exit(1 if failures else 0)
