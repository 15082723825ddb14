#!/usr/bin/python3
"""Loss of an exported language model on a byte string, from PyTorch.

    build/bin/lm-export --checkpoint runs/tiny-fpa --out model.pt
    /usr/bin/python3 lm/python/loss_example.py model.pt "The jury said it was a fine day."
"""
import argparse
import math
import os
import sys

root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
p.add_argument("model", help="file written by lm-export")
p.add_argument("text", help="the bytes to score (UTF-8)")
p.add_argument("--ops", default=os.path.join(root, "build", "lib", "libfpa_torch_ops.so"),
               help="the operator library (default: %(default)s)")
p.add_argument("--impl", default="auto", choices=["auto", "reference", "fused", "cuda"])
a = p.parse_args()
if len(a.text.encode()) < 2:  # the loss predicts each byte from the ones before it
    print(f"error: text: {len(a.text.encode())} bytes; at least 2 are needed (one to predict)", file=sys.stderr)
    sys.exit(2)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fpa_lm  # noqa: E402

fpa_lm.load_ops(a.ops)
model = fpa_lm.load_exported(a.model, a.impl)
loss = fpa_lm.mean_loss(model, a.text.encode())
print(f"{model.config['kind']}: {len(a.text.encode()) - 1} bytes predicted, "
      f"loss {loss:.6f} nats/byte ({loss / math.log(2):.4f} bits/byte, perplexity {math.exp(loss):.3f})")
