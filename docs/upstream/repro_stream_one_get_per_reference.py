"""Streaming an image folder reads an image once per row that names it, not once.

    python repro_stream_one_get_per_reference.py [rows]

Plain `datasets` + Pillow: ``rows`` rows that all name the same 2 images (as the six needle
depths of one question share one haystack). A streaming ``imagefolder`` load of a local folder
reads every row; the script counts the files `Image.decode_example` opens. From the Hub the same
code path opens each with ``xopen`` (features/image.py): one HTTP GET of the whole file per row.
"""
import sys
import tempfile
from collections import Counter


def main(rows: int = 50) -> None:
    import datasets
    import PIL.Image
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tempfile.mkdtemp()
    for name, colour in (("a.jpg", (10, 20, 30)), ("b.jpg", (200, 100, 0))):
        PIL.Image.new("RGB", (640, 480), colour).save(f"{root}/{name}")
    pq.write_table(pa.table({"file_names": [["a.jpg", "b.jpg"]] * rows, "row": list(range(rows))}),
                   f"{root}/metadata.parquet")
    opened: Counter = Counter()
    original = PIL.Image.open

    def counting_open(fp, *args, **kwargs):
        if isinstance(fp, str):
            opened[fp.rsplit("/", 1)[-1]] += 1
        return original(fp, *args, **kwargs)

    PIL.Image.open = counting_open
    ds = datasets.load_dataset("imagefolder", data_dir=root, split="train", streaming=True)
    slots = sum(len(row["images"]) for row in ds)
    print(f"datasets {datasets.__version__}: {rows} rows, {slots} image slots, 2 distinct files; "
          f"opens per file: {dict(sorted(opened.items()))}")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
