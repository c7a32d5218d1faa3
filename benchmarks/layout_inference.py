"""Which files layout does every ``datasets`` version read with its image builder, whatever the folder holds?

``python -m benchmarks.layout_inference [--python PY ...]`` (each PY an interpreter with another
``datasets``, e.g. a venv with datasets 4.0: ``python -m venv --system-site-packages /tmp/ds40 &&
/tmp/ds40/bin/pip install datasets==4.0.0``; default: this interpreter). A folder holds a text-only
config, a one-image config and a three-image config (``a_text_8k``, ``b_one_8k``, ``c_many_8k``,
built by ``mmlb``'s writer); each option below rewrites it, and every config is loaded, in memory
and streaming with each image decoded, under each of the six README orders, in a fresh process per
order and interpreter. ``datasets`` infers ONE builder per folder from the first README config's
data files (load.py), so the order matters unless the layout makes it not matter. Printed: loads
that gave every row and image, of 36 (6 orders x 3 configs x 2 modes), per option and version.
"""
from __future__ import annotations

import argparse
import io
import itertools
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from benchmarks._util import table

CONFIGS = {"a_text_8k": [[], []], "b_one_8k": [[0], []], "c_many_8k": [[1, 2], [3, 1], [2]]}

LOAD = """
import json, sys
import datasets
datasets.disable_progress_bars()
datasets.logging.set_verbosity(datasets.logging.CRITICAL)
folder, cache, expected = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
ok = 0
for config, counts in expected.items():
    for streaming in (False, True):
        try:
            rows = datasets.load_dataset(folder, config, split="test", streaming=streaming,
                                         cache_dir=f"{cache}/{config}-{streaming}")
            ok += [len([image.size for image in row["images"]]) for row in rows] == counts
        except Exception:
            pass
print(ok)
"""


def build(folder: Path, store: Path) -> None:
    from PIL import Image

    from mmlbdata.core.schema import make_example
    from mmlbdata.core.store import ImageStore
    from mmlbdata.dataset.build import store_config

    images = ImageStore(store)
    refs = []
    for i in range(5):
        buffer = io.BytesIO()
        Image.new("RGB", (40 + i, 30), (40 * i, 90, 160)).save(buffer, format="JPEG")
        refs.append(images.put_bytes(buffer.getvalue(), "jpg"))
    for config, rows in CONFIGS.items():
        examples = (make_example(id=f"r{r}", dataset="toy", length=8192, num_tokens=10, prompt="<image>" * len(picks),
                                 images=[refs[i] for i in picks], question="q", answers=["a"], metric="binary_acc",
                                 meta={}) for r, picks in enumerate(rows))
        store_config(folder, config, examples, manifest={"family": "toy"})


def _front(folder: Path) -> tuple[dict, str]:
    _, front, body = (folder / "README.md").read_text().split("---", 2)
    return yaml.safe_load(front), body


def _write_front(folder: Path, meta: dict, body: str) -> None:
    (folder / "README.md").write_text("---\n" + yaml.safe_dump(meta, sort_keys=False) + "---" + body)


def _entries(folder: Path, change) -> None:
    meta, body = _front(folder)
    for entry in meta["configs"]:
        change(entry, entry["data_files"][0])
    _write_front(folder, meta, body)


def without_hint(folder: Path, keep: int = 0) -> None:
    """The entries as before issue 43 (metadata, then partitions), ``keep`` hint PNGs left in."""
    from mmlbdata.dataset.writer import IMAGE_FOLDER_HINT

    _entries(folder, lambda entry, split: split.update(path=[p for p in split["path"]
                                                             if p not in IMAGE_FOLDER_HINT[keep:]]))


def default_many(folder: Path) -> None:
    without_hint(folder)
    _entries(folder, lambda entry, split: entry.update(default=True) if entry["config_name"] == "c_many_8k" else None)


def metadata_in_config_folders(folder: Path) -> None:
    """``<config>/metadata.parquet`` (a name datasets counts as metadata), images as ``../images/...``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    without_hint(folder)
    for config in CONFIGS:
        source = folder / f"{config}.metadata.parquet"
        table = pq.read_table(source)
        names = table.column("images_file_names").combine_chunks()
        values = pa.array(["../" + name for name in names.flatten().to_pylist()], pa.string())
        table = table.set_column(table.schema.get_field_index("images_file_names"), "images_file_names",
                                 pa.ListArray.from_arrays(names.offsets, values))
        (folder / config).mkdir()
        pq.write_table(table, folder / config / "metadata.parquet")
        source.unlink()
    _entries(folder, lambda entry, split: (split.update(path=[f"{entry['config_name']}/metadata.parquet",
                                                               *split["path"][1:]]),
                                           entry.pop("metadata_filenames")))


OPTIONS = {  # option -> (how the folder is rewritten, whether only the order it was written in is tried)
    "<config>.metadata.parquet, README by name (the Hub's order)": (without_hint, False),
    "<config>.metadata.parquet, image configs listed first (da65b76)": (without_hint, True),
    "default: true on the three-image config": (default_many, False),
    "<config>/metadata.parquet (datasets' metadata name), ../images paths": (metadata_in_config_folders, False),
    "one hint PNG in every config's data files": (lambda folder: without_hint(folder, keep=1), False),
    "two hint PNGs in every config's data files (chosen)": (lambda folder: None, False),
}
IMAGE_CONFIGS_FIRST = ("b_one_8k", "c_many_8k", "a_text_8k")  # what da65b76's README listing gave


def reorder(folder: Path, order) -> None:
    meta, body = _front(folder)
    entries = {entry["config_name"]: entry for entry in meta["configs"]}
    meta["configs"] = [entries[name] for name in order]
    _write_front(folder, meta, body)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", action="append", default=None, help="an interpreter to load with (repeatable)")
    args = parser.parse_args(argv)
    pythons = args.python or [sys.executable]
    versions = {py: subprocess.run([py, "-c", "import datasets; print(datasets.__version__)"], capture_output=True,
                                   text=True, check=True).stdout.strip() for py in pythons}
    expected = json.dumps({config: [len(row) for row in rows] for config, rows in CONFIGS.items()})
    rows = []
    with tempfile.TemporaryDirectory(prefix="layout-inference-") as tmp:
        work = Path(tmp)
        build(work / "built", work / "store")
        for number, (option, (rewrite, fixed)) in enumerate(OPTIONS.items()):
            row = {"option": option}
            orders = [IMAGE_CONFIGS_FIRST] if fixed else list(itertools.permutations(CONFIGS))
            for py, version in versions.items():
                loaded = 0
                for index, order in enumerate(orders):
                    folder = work / f"o{number}-{index}-{version}"
                    shutil.copytree(work / "built", folder)
                    rewrite(folder)
                    reorder(folder, order)
                    done = subprocess.run([py, "-c", LOAD, str(folder), str(work / "cache" / folder.name), expected],
                                          capture_output=True, text=True)
                    loaded += int(done.stdout.split()[-1]) if done.returncode == 0 else 0
                row[f"datasets {version}"] = f"{loaded}/{len(orders) * len(CONFIGS) * 2}"
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    print(table(rows, ["option", *[f"datasets {v}" for v in versions.values()]]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
