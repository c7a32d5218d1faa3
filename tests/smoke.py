"""GPU (or CPU) smoke run of the reference runner: a tiny random VLM on synthetic examples.

Builds nothing heavy: a LLaVA-style model from a config (no download), a few dozen examples
with generated images written as a built-dataset folder, then the real ``mmlb run`` code path
(HF backend, batching, prefill, image limit) and ``mmlb eval``; prints throughput.

    python -m tests.smoke --device cuda --examples 64 --images 16 --batch-size 8
"""
from __future__ import annotations

import argparse
import io
import json
import random
import sys
import tempfile
import time
from pathlib import Path


def write_built(root: Path, configs: dict[str, list[dict]]) -> Path:
    """A dataset folder shaped like the writer's output: data/<config>/*.parquet plus a
    README whose ``configs:`` YAML lets ``datasets.load_dataset(root, config)`` find them."""
    import datasets

    from mmlbdata.core.schema import FEATURES as features

    yaml = ["---", "configs:"]
    for name, rows in configs.items():
        out = Path(root) / "data" / name
        out.mkdir(parents=True, exist_ok=True)
        cols = {k: [r[k] for r in rows] for k in features}
        datasets.Dataset.from_dict(cols, features=features).to_parquet(str(out / "test-00000-of-00001.parquet"))
        yaml += [f"- config_name: {name}", "  data_files:", "  - split: test", f"    path: data/{name}/*.parquet"]
    (Path(root) / "README.md").write_text("\n".join(yaml + ["---", ""]) + "\n")
    return Path(root)


def synthetic_built(root: Path, examples: int, images: int, size: int = 336, seed: int = 0,
                    config: str = "vh_single_8k") -> Path:
    """Visual-Haystack-shaped examples with generated PNG images, as a built folder."""
    from PIL import Image

    rng = random.Random(seed)

    def png() -> bytes:
        img = Image.new("RGB", (size, size), tuple(rng.randrange(256) for _ in range(3)))
        buf = io.BytesIO()
        img.save(buf, format="PNG")
        return buf.getvalue()

    pool = [png() for _ in range(min(images, 8))]
    rows = [{"id": f"smoke{i}", "dataset": "visual_haystack", "length": 8192, "num_tokens": 0,
             "prompt": "<image>" * images + "\nIs there a dog in any image? Answer yes or no.",
             "images": [{"bytes": pool[(i + j) % len(pool)], "path": None} for j in range(images)],
             "question": "Is there a dog?", "answers": ["yes" if i % 2 else "no"], "metric": "binary_acc",
             "meta": json.dumps({"category": "NIAH"})} for i in range(examples)]
    return write_built(root, {config: rows})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="auto")
    p.add_argument("--model", default=None, help="a local VLM folder instead of the tiny random one")
    p.add_argument("--examples", type=int, default=32)
    p.add_argument("--images", type=int, default=8)
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--hidden", type=int, default=256, help="tiny model width")
    p.add_argument("--layers", type=int, default=4, help="tiny model depth")
    p.add_argument("--image-size", type=int, default=224, help="tiny model vision input (multiple of 14)")
    p.add_argument("--max-new-tokens", type=int, default=32)
    p.add_argument("--workdir", default=None)
    args = p.parse_args(argv)

    from mmlbdata.evaluation.evaluate import evaluate
    from mmlbdata.runner.core import run
    from mmlbdata.runner.hf import HFBackend
    from tests.tiny import build_tiny_vlm

    work = Path(args.workdir or tempfile.mkdtemp(prefix="mmlb_smoke_"))
    t0 = time.perf_counter()
    model = args.model or build_tiny_vlm(work / "tiny", hidden=args.hidden, layers=args.layers,
                                         image_size=args.image_size)
    built = synthetic_built(work / "built", args.examples, args.images)
    backend = HFBackend(str(model), device=args.device)
    setup = time.perf_counter() - t0
    preds = work / "preds.jsonl"
    if preds.exists():
        preds.unlink()
    stats = run(backend, built, ["vh_single_8k"], preds, batch_size=args.batch_size,
                max_new_tokens=args.max_new_tokens)
    report = evaluate(preds, built, ["vh_single_8k"])
    import torch

    mem = torch.cuda.max_memory_allocated() / 2**20 if backend.device.startswith("cuda") else 0.0
    print(f"device={backend.device} model={'tiny' if not args.model else args.model} setup={setup:.1f}s")
    print(f"throughput: {stats.line()}")
    print(f"peak GPU memory: {mem:.0f} MiB; scored {report['configs']['vh_single_8k']['answered']} predictions")
    return 0 if stats.examples == args.examples else 1


if __name__ == "__main__":
    sys.exit(main())
