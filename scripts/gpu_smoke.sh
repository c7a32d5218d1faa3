#!/usr/bin/env bash
# One-command GPU smoke test of the reference runner (mmlb run, HF backend): a tiny random
# LLaVA-style model built from a config (no download), synthetic image examples, greedy
# decoding on CUDA, then scoring; prints examples/s, tokens/s and peak GPU memory.
# Usage: scripts/gpu_smoke.sh [--examples 64 --images 16 --batch-size 8 --model /path/to/local/vlm]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 'no CUDA device visible to torch')"
exec "$PY" -m tests.smoke --device cuda "$@"
