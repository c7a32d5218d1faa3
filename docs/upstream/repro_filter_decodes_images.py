"""Dataset.filter with a per-example function decodes every column of a 1,000-row batch.

    python repro_filter_decodes_images.py [rows] [images_per_row]

Plain `datasets` + Pillow + numpy; writes an image folder with a metadata.parquet under a
temporary directory, then measures each idiom's peak RSS in a fresh process.
"""
import os
import subprocess
import sys
import tempfile

CHILD = """
import sys, datasets
datasets.disable_progress_bars()
ds = datasets.load_dataset("imagefolder", data_dir=sys.argv[1], split="train")
if sys.argv[2] == "plain":
    ds.filter(lambda r: r["num_tokens"] > 0)
else:
    ds.filter(lambda n: n > 0, input_columns=["num_tokens"])
print(next(int(l.split()[1]) // 1024 for l in open("/proc/self/status") if l.startswith("VmHWM")))
"""


def main(rows: int = 24, per_row: int = 20) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    root = tempfile.mkdtemp()
    rng = np.random.default_rng(0)
    names = []
    for i in range(per_row * 2):  # 1000x1000 RGB: 3 MB decoded, ~60 KB as JPEG
        pixels = (rng.random((50, 50, 3)) * 255).astype("uint8")
        Image.fromarray(pixels).resize((1000, 1000)).save(f"{root}/{i}.jpg", quality=80)
        names.append(f"{i}.jpg")
    table = pa.table({"file_names": [[names[(r + k) % len(names)] for k in range(per_row)] for r in range(rows)],
                      "num_tokens": list(range(1, rows + 1))})
    pq.write_table(table, f"{root}/metadata.parquet")
    for idiom in ("plain", "input_columns"):
        env = {**os.environ, "HF_DATASETS_CACHE": tempfile.mkdtemp()}
        out = subprocess.run([sys.executable, "-c", CHILD, root, idiom], env=env, capture_output=True, text=True)
        print(f"{idiom:>13}: peak RSS {out.stdout.strip() or out.stderr[-300:]} MB")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
