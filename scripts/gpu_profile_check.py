"""One 128K MMLongBench-shaped row through the Qwen2.5-VL profile with YaRN, on random weights
of the real architecture (head 128, mrope [16, 24, 24], the released image processor), through
the real ``mmlb run`` path (profile preprocessing, per-dataset budget, generate); prints the
summary line (stage seconds, GPU peak memory), the row's prompt tokens and the wall seconds.

    python scripts/gpu_profile_check.py                      # CUDA, 125 images of 896x896 (~128K tokens)
    python scripts/gpu_profile_check.py --device cpu --images 2 --hidden 256 --layers 1   # a CPU try

No download: the model is built from a config in a temporary folder.
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


def noise_jpeg(size: int, rng: random.Random) -> bytes:
    """A photo-sized JPEG of coloured blocks (cheap to make, not one flat colour)."""
    from PIL import Image

    small = Image.new("RGB", (16, 16))
    small.putdata([tuple(rng.randrange(256) for _ in range(3)) for _ in range(256)])
    buf = io.BytesIO()
    small.resize((size, size), Image.Resampling.NEAREST).save(buf, format="JPEG", quality=90)
    return buf.getvalue()


def built_row(root: Path, images: int, size: int) -> Path:
    """A vh_single_128k config of one row: ``images`` photos of ``size`` px and the VH question."""
    from smoke import write_built  # tests/, on the path main() puts it on

    rng = random.Random(0)
    pics = [noise_jpeg(size, rng) for _ in range(images)]
    row = {"id": "gpu128k", "dataset": "vh_single", "length": 131072, "num_tokens": 0,
           "prompt": "You are given a set of images. Please answer the question in Yes or No based on the given "
                     "images. Write your answer in the following format:\nAnswer: [answer]\n\n"
                     + "\n".join(["<image>"] * images) + "\n\nQuestion: For the image with a dog, is there a cat?",
           "images": [{"bytes": b, "path": None} for b in pics], "question": "cat?", "answers": ["No"],
           "metric": "binary_acc", "meta": json.dumps({})}
    return write_built(root, {"vh_single_128k": [row]})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", default="cuda")
    p.add_argument("--images", type=int, default=125, help="896 px images: 1,024 tokens each (125: ~128K)")
    p.add_argument("--size", type=int, default=896)
    p.add_argument("--hidden", type=int, default=1024, help="text width (8 heads of 128)")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--attn", default="sdpa", help="attention implementation (sdpa, flash_attention_2)")
    p.add_argument("--no-yarn", action="store_true")
    p.add_argument("--workdir", default=None)
    args = p.parse_args(argv)

    import torch

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import no_torchvision  # qwen-vl-utils and Qwen2-VL processors need torchvision: a stand-in where it won't load

    if not no_torchvision.torchvision_loads():
        print("torchvision does not load here: images only, through tests/no_torchvision.py")
    no_torchvision.install()

    from mmlbdata.runner.core import PipelineOptions, run
    from mmlbdata.runner.hf import HFBackend
    from mmlbdata.runner.profiles import ProfileOptions, make_profile
    from tiny_families import build_tiny  # tests/, on the path above

    work = Path(args.workdir or tempfile.mkdtemp(prefix="mmlb_gpu_profile_"))
    model = build_tiny("qwen2_5_vl", work, hidden=args.hidden, layers=args.layers, heads=args.hidden // 128,
                       vision_depth=2)
    data = built_row(work / "built", args.images, args.size)
    profile = make_profile("qwen2_5_vl", str(model), ProfileOptions(use_yarn=not args.no_yarn))
    backend = HFBackend(str(model), device=args.device, attn_implementation=args.attn, profile=profile)
    print(f"profile: {profile.describe()}; rope: {backend.model.config.text_config.rope_parameters}")
    out = work / "preds.jsonl"
    out.unlink(missing_ok=True)
    started = time.perf_counter()
    stats = run(backend, data, ["vh_single_128k"], out, pipeline=PipelineOptions(workers=0))
    seconds = time.perf_counter() - started
    pred = json.loads(out.read_text().splitlines()[0])
    peak = torch.cuda.max_memory_allocated() / 2**30 if backend.device.startswith("cuda") else float("nan")
    print(stats.line())
    print(f"128K row: {pred['prompt_tokens']} prompt tokens, {pred['generated_tokens']} generated, "
          f"{seconds:.1f} s end to end, GPU peak {peak:.2f} GiB ({backend.device})")
    return 0 if stats.examples == 1 and stats.errors == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
