"""Many-shot ICL rows built from real photos (hymenoptera_val, imagenet_samples_100 as class folders)."""
from __future__ import annotations

import json
import shutil
import re

import pytest

from mmlb_builders.icl import CLASS_COUNTS, ManyShotICL, build_prompt
from mmlbdata.core.report import BuildReport
from mmlbdata.official import mmlongbench_prompts as prompts
from mmlbdata.sources.icl import read_class_folders, read_icl_source, read_inat
from mmlbdata.core.store import ImageStore

LABEL = re.compile(r"<image>\nlabel: (\d+)")


@pytest.fixture(scope="module")
def imagenet_classes(real_data, tmp_path_factory):
    """The 100 ImageNet photos as 50 class folders of 2 photos each (one exemplar, one held out)."""
    src = real_data / "images" / "imagenet_samples_100"
    entries = sorted(json.loads((src / "labels.json").read_text()), key=lambda e: e["file"])
    root = tmp_path_factory.mktemp("imagenet_classes")
    for i in range(0, len(entries), 2):
        folder = root / entries[i]["label"].replace(" ", "_").replace("/", "_")
        folder.mkdir()
        for entry in entries[i:i + 2]:
            shutil.copyfile(src / entry["file"], folder / entry["file"])  # a copy: symlinks out of a source are refused
    return root


def build(config, source_key, path, counter, tmp_path, **options):
    builder = ManyShotICL(config, sources={source_key: path}, store=ImageStore(tmp_path / "store"),
                          counter=counter, report=BuildReport(), options=options)
    return list(builder.generate()), builder.report


def check_row(row, counter, n_classes):
    meta = json.loads(row["meta"])
    labels = [int(x) for x in LABEL.findall(row["prompt"])]
    assert labels == meta["exemplar_labels"] and len(labels) == len(row["images"]) - 1
    # every complete round has each label exactly once; the last (cut) round has no repeats
    complete, rest = divmod(len(labels), n_classes)
    for r in range(complete):
        assert sorted(labels[r * n_classes:(r + 1) * n_classes]) == list(range(n_classes))
    tail = labels[complete * n_classes:]
    assert len(set(tail)) == len(tail)
    # one mapping per row, consistent with the answer
    mapping = meta["mapping"]
    assert sorted(mapping.values()) == list(range(n_classes)) and len(meta["class_names"]) == n_classes
    assert row["answers"] == [str(mapping[meta["test_class"]])]
    # the held-out test image is the last image and never an exemplar
    assert meta["test_image"] not in meta["exemplar_images"]
    assert row["images"][-1].path not in {im.path for im in row["images"][:-1]}
    assert row["prompt"].endswith(row["question"] + " <image>") and "<image>" not in row["question"]
    # MMLongBench data.py load_icl_er: user_template (L311), items "<image>\nlabel: {id}" (L312)
    # joined by blank lines (L340), the test image as the question (L337)
    assert row["prompt"] == (
        "You need to recognize entities in images. Use the provided mapping from the image to label to assign "
        "a label to the test image. Only output \"label: {label}\" and nothing else.\n\nTraining examples:\n"
        + "\n\n".join(f"<image>\nlabel: {label}" for label in labels) + "\n\nNow classify this image: <image>")
    # the budget invariant
    assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
    assert row["num_tokens"] <= row["length"] < meta["next_num_tokens"]
    return meta


def test_prompt_is_the_benchmarks_template():
    assert prompts.TEMPLATES["icl"].startswith("You need to recognize entities in images. Use the provided mapping")
    prompt = build_prompt([1, 0])
    assert "Only output \"label: {label}\" and nothing else.\n\nTraining examples:\n<image>\nlabel: 1\n\n" \
           "<image>\nlabel: 0\n\nNow classify this image: <image>" in prompt


def test_hymenoptera_two_classes(real_data, counter, tmp_path):
    source = real_data / "images" / "hymenoptera_val"
    pools = read_class_folders(source, ImageStore(tmp_path / "s"), BuildReport())[""]
    assert sorted(pools) == ["ants", "bees"]
    train_keys = {im.key for p in pools.values() for im in p.train}
    assert not train_keys & {im.key for p in pools.values() for im in p.test}
    rows, report = build("food101_16k", "food101", source, counter, tmp_path, num_classes=2, num_test=4)
    assert len(rows) == 4
    tests = set()
    for row in rows:
        meta = check_row(row, counter, 2)
        assert meta["rounds"] >= 2
        tests.add(meta["test_image"])
        assert meta["test_image"] not in train_keys
    assert len(tests) == 4
    # balanced test classes
    assert sorted(json.loads(r["meta"])["test_class"] for r in rows) == ["ants", "ants", "bees", "bees"]


@pytest.mark.parametrize("key", list(CLASS_COUNTS))
def test_imagenet_class_counts_per_length(imagenet_classes, counter, tmp_path, key):
    rows, _ = build(f"cars196_{key}", "cars196", imagenet_classes, counter, tmp_path, num_test=3)
    assert len(rows) == 3
    n = CLASS_COUNTS[key]
    for row in rows:
        meta = check_row(row, counter, n)
        assert len(meta["shots_per_class"]) == n
    # classes sampled once per dataset: the 8k classes are a prefix of the 32k ones
    if key == "32k":
        small, _ = build("cars196_8k", "cars196", imagenet_classes, counter, tmp_path, num_test=1)
        assert set(json.loads(small[0]["meta"])["class_names"]) <= set(json.loads(rows[0]["meta"])["class_names"])


def test_rows_are_reproducible(imagenet_classes, counter, tmp_path):
    a, _ = build("sun397_8k", "sun397", imagenet_classes, counter, tmp_path, num_test=2)
    b, _ = build("sun397_8k", "sun397", imagenet_classes, counter, tmp_path / "b", num_test=2)
    assert [r["prompt"] for r in a] == [r["prompt"] for r in b]
    assert [r["meta"] for r in a] == [r["meta"] for r in b]
    # a different example gets a different label mapping
    assert json.loads(a[0]["meta"])["mapping"] != json.loads(a[1]["meta"])["mapping"]


def test_bad_image_is_reported_and_skipped(imagenet_classes, tmp_path, counter):
    root = tmp_path / "classes"
    for folder in sorted(imagenet_classes.iterdir())[:5]:
        (root / folder.name).mkdir(parents=True)
        for f in folder.iterdir():
            shutil.copyfile(f.resolve(), root / folder.name / f.name)  # a copy: symlinks out of a source are refused
    first = sorted(root.iterdir())[0]
    (first / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0" + b"\0" * 100)
    rows, report = build("food101_8k", "food101", root, counter, tmp_path, num_test=5)
    assert report.num_skipped >= 1 and "broken.jpg" in report.summary()
    assert rows and all(json.loads(r["meta"])["test_image"] != f"{first.name}/broken.jpg" for r in rows)
    for row in rows:
        assert "broken.jpg" not in json.loads(row["meta"])["exemplar_images"]


def test_inat_coco_json_two_domains(coco_mini, tmp_path, counter):
    """iNat2021's COCO-style files (real COCO photos stand in for the species photos)."""
    images = sorted((coco_mini / "val2017").glob("*.jpg"))[:24]
    root = tmp_path / "inat"
    cats = [{"id": i, "name": f"Species {i}", "common_name": f"sp{i}", "supercategory": sup,
             "kingdom": "Animalia" if sup == "Birds" else "Plantae"}
            for i, sup in enumerate(["Birds"] * 3 + ["Plants"] * 3 + ["Insects"])]

    def split(name, chosen):
        ims, anns = [], []
        for j, path in enumerate(chosen):
            target = root / name / f"{j:02d}" / path.name
            target.parent.mkdir(parents=True)
            shutil.copyfile(path, target)  # a copy: symlinks out of a source are refused
            ims.append({"id": j, "file_name": f"{name}/{j:02d}/{path.name}", "width": 1, "height": 1})
            anns.append({"id": j, "image_id": j, "category_id": j % len(cats)})
        (root / f"{name}.json").write_text(json.dumps({"images": ims, "annotations": anns, "categories": cats}))

    split("train", images[:14])
    split("val", images[14:])
    pools = read_inat(root, ImageStore(tmp_path / "s"), BuildReport())
    assert sorted(pools) == ["Birds", "Plants"] and sorted(pools["Birds"]) == ["Species 0", "Species 1", "Species 2"]
    assert read_icl_source(root, ImageStore(tmp_path / "s"), BuildReport()).keys() == pools.keys()
    rows, _ = build("inat2021_8k", "inat2021", root, counter, tmp_path, num_classes=3, num_test=4)
    assert [json.loads(r["meta"])["domain"] for r in rows] == ["Birds", "Plants", "Birds", "Plants"]
    for row in rows:
        meta = check_row(row, counter, 3)
        domain_classes = set(pools[meta["domain"]])
        assert set(meta["class_names"]) == domain_classes


@pytest.mark.parametrize("layout", ["save_to_disk", "parquet"])
def test_hub_dataset_read_with_datasets(real_data, tmp_path, counter, layout):
    """A Hub-style dataset (image + ClassLabel, train/test splits) read without decoding images."""
    import datasets

    src = real_data / "images" / "hymenoptera_val"
    files = {c: sorted((src / c).glob("*.jpg"))[:8] for c in ("ants", "bees")}
    features = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=["ants", "bees"])})

    def split(sl):
        rows = [{"image": {"bytes": f.read_bytes(), "path": f.name}, "label": i} for i, c in enumerate(("ants", "bees")) for f in files[c][sl]]
        return datasets.Dataset.from_list(rows, features=features)

    dd = datasets.DatasetDict({"train": split(slice(0, 6)), "test": split(slice(6, 8))})
    root = tmp_path / "hub"
    if layout == "save_to_disk":
        dd.save_to_disk(str(root))
    else:
        (root / "data").mkdir(parents=True)
        for name, ds in dd.items():
            ds.to_parquet(str(root / "data" / f"{name}-00000-of-00001.parquet"))
    store = ImageStore(tmp_path / "store")
    pools = read_icl_source(root, store, BuildReport())[""]
    assert sorted(pools) == ["ants", "bees"] and len(pools["ants"].train) == 6 and len(pools["bees"].test) == 2
    rows, _ = build("food101_8k", "food101", root, counter, tmp_path, num_classes=2, num_test=2)
    assert len(rows) == 2
    for row in rows:
        check_row(row, counter, 2)
        assert all(str(im.path).startswith(str(tmp_path / "store")) for im in row["images"])
