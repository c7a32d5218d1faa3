"""Image-classification sources for many-shot ICL, each read in its released form.

* Hub datasets (``tanganke/stanford_cars``, ``ethz/food101``, ``tanganke/sun397``): a local
  snapshot of the repository (parquet shards) or a ``save_to_disk`` folder, read with
  ``datasets``; the ``label`` ClassLabel gives the class names; the image column is read without
  decoding and only the images a build uses are written to the image store.
* Class-per-folder image folders: ``<root>/<class>/*.jpg``, or with split folders
  ``<root>/train/<class>/`` + ``<root>/test|val|validation/<class>/``.
* iNaturalist 2021: COCO-style ``train.json`` / ``val.json`` (``images``, ``annotations``,
  ``categories`` with ``supercategory``) with images under ``<root>/<file_name>``.

Every reader returns ``{domain: {class name: ClassPool}}`` (one domain, ``""``, except iNat), where
a pool holds the exemplar candidates and the held-out test candidates of a class. Images are
``LabeledImage`` handles: the file is opened (header only) when a build first uses it, and refused
then (a ``BadImageError`` the builder reports) if it lies outside the source root (a ``file_name``
with ``..`` or an absolute path, a symlink leading out).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from mmlbdata.core.report import BuildReport
from mmlbdata.core.seeding import rng as seeded_rng
from mmlbdata.core.store import BadImageError, ImageRef, ImageStore

IMAGE_EXTS = {".jpg", ".jpeg", ".png", ".webp", ".bmp", ".gif"}
TEST_SPLITS = ("test", "val", "validation")
LAYOUT_HUB = "Hub dataset snapshot (parquet shards with image + label ClassLabel) or save_to_disk folder"
LAYOUT_FOLDER = "class folders: <root>/<class>/*.jpg, or <root>/train/<class>/ + <root>/test/<class>/"
LAYOUT_INAT = "iNat2021: train.json (or train_mini.json) + val.json COCO-style, images at <root>/<file_name>"


@dataclass
class LabeledImage:
    """A source image of one class, opened lazily (``ref`` reads the header only once)."""

    key: str
    label: str
    load: Callable[[], ImageRef] = field(repr=False, compare=False)
    _ref: Optional[ImageRef] = field(default=None, repr=False, compare=False)

    @property
    def ref(self) -> ImageRef:
        if self._ref is None:
            self._ref = self.load()
        return self._ref


@dataclass
class ClassPool:
    train: list[LabeledImage] = field(default_factory=list)
    test: list[LabeledImage] = field(default_factory=list)


Pools = dict[str, dict[str, ClassPool]]


# --------------------------------------------------------------------------- image folders

def _images_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix.lower() in IMAGE_EXTS)


def _class_dirs(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_dir() and not p.name.startswith("."))


def _folder_image(path: Path, label: str, root: Path, store: ImageStore) -> LabeledImage:
    relative = path.relative_to(root).as_posix()
    return LabeledImage(relative, label, lambda: store.ref_inside(root, relative))


def read_class_folders(root: Path, store: ImageStore, report: BuildReport, *, seed: int = 0,
                       test_fraction: float = 0.2) -> Pools:
    """Class folders; without split folders a seeded ``test_fraction`` of each class (at least one
    image, leaving at least one exemplar) is held out as test images."""
    root = Path(root)
    train_dir = root / "train"
    test_dir = next((root / s for s in TEST_SPLITS if (root / s).is_dir()), None)
    pools: dict[str, ClassPool] = {}
    if train_dir.is_dir() and test_dir is not None:
        for split_dir, attr in ((train_dir, "train"), (test_dir, "test")):
            for cdir in _class_dirs(split_dir):
                pool = pools.setdefault(cdir.name, ClassPool())
                getattr(pool, attr).extend(_folder_image(p, cdir.name, root, store) for p in _images_in(cdir))
    else:
        for cdir in _class_dirs(root):
            images = [_folder_image(p, cdir.name, root, store) for p in _images_in(cdir)]
            if len(images) < 2:
                report.skip(cdir, None, f"class '{cdir.name}' has {len(images)} image(s): needs an exemplar "
                                        "and a held-out test image")
                continue
            seeded_rng(seed, "holdout", cdir.name).shuffle(images)
            n_test = min(len(images) - 1, max(1, round(len(images) * test_fraction)))
            pools[cdir.name] = ClassPool(train=images[n_test:], test=images[:n_test])
    return {"": _usable(pools, root, report)}


def _usable(pools: dict[str, ClassPool], where: Path, report: BuildReport) -> dict[str, ClassPool]:
    out = {}
    for name in sorted(pools):
        pool = pools[name]
        if not pool.train or not pool.test:
            report.skip(where, name, f"class '{name}' has {len(pool.train)} exemplar and {len(pool.test)} "
                                     "test image(s): needs both")
            continue
        out[name] = pool
    return out


# --------------------------------------------------------------------------- Hub datasets

def is_hub_dataset(root: Path) -> bool:
    root = Path(root)
    return (root / "dataset_dict.json").is_file() or (root / "state.json").is_file() or \
        any(root.rglob("*.parquet")) or any(root.rglob("*.arrow"))


def _load_hub(root: Path):
    import datasets

    if (root / "dataset_dict.json").is_file() or (root / "state.json").is_file():
        loaded = datasets.load_from_disk(str(root))
    else:
        loaded = datasets.load_dataset(str(root))
    return loaded if isinstance(loaded, datasets.DatasetDict) else datasets.DatasetDict({"train": loaded})


def _image_column(ds) -> str:
    import datasets

    for name, feature in ds.features.items():
        if isinstance(feature, datasets.Image):
            return name
    raise ValueError(f"no image column in {list(ds.features)}")


def _label_column(ds) -> str:
    import datasets

    for name, feature in ds.features.items():
        if isinstance(feature, datasets.ClassLabel):
            return name
    raise ValueError(f"no ClassLabel column in {list(ds.features)}")


def _hub_image(ds, column: str, split: str, index: int, label: str, store: ImageStore,
               root: Path) -> LabeledImage:
    def load() -> ImageRef:
        value = ds[index][column]
        if value.get("bytes"):
            ext = Path(value.get("path") or "x.jpg").suffix.lstrip(".") or "jpg"
            try:
                return store.put_bytes(value["bytes"], ext)
            except ValueError as err:
                raise BadImageError(f"{split}[{index}]", f"unreadable image bytes ({err})") from None
        path = value["path"]  # no bytes: a file, which must lie inside the snapshot
        return store.ref_inside(root, os.path.relpath(path, root) if os.path.isabs(path) else path)

    return LabeledImage(f"{split}/{index}", label, load)


def read_hub_dataset(root: Path, store: ImageStore, report: BuildReport) -> Pools:
    """Exemplars from ``train``, test images from ``test`` (or ``validation``)."""
    import datasets

    root = Path(root)
    splits = _load_hub(root)
    test_split = next((s for s in TEST_SPLITS if s in splits), None)
    if "train" not in splits or test_split is None:
        raise ValueError(f"{root}: needs a train and a test/validation split, found {list(splits)} ({LAYOUT_HUB})")
    pools: dict[str, ClassPool] = {}
    for split, attr in (("train", "train"), (test_split, "test")):
        ds = splits[split]
        image_col, label_col = _image_column(ds), _label_column(ds)
        names = ds.features[label_col].names
        ds = ds.cast_column(image_col, datasets.Image(decode=False))
        for index, label in enumerate(ds[label_col]):
            if label is None or not 0 <= label < len(names):
                report.skip(root, f"{split}[{index}]", f"label {label!r} outside the {len(names)} classes")
                continue
            pool = pools.setdefault(names[label], ClassPool())
            getattr(pool, attr).append(_hub_image(ds, image_col, split, index, names[label], store, root))
    return {"": _usable(pools, root, report)}


# --------------------------------------------------------------------------- iNaturalist 2021

def _read_coco_split(path: Path, root: Path, store: ImageStore, report: BuildReport,
                     domains: tuple[str, ...]) -> dict[str, dict[str, list[LabeledImage]]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        categories = {c["id"]: c for c in data["categories"]}
        images = {im["id"]: im for im in data["images"]}
        annotations = data["annotations"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not an iNat/COCO-style file ({exc})") from exc
    out: dict[str, dict[str, list[LabeledImage]]] = {d: {} for d in domains}
    labelled: set = set()  # an image labelled twice would be drawn twice into one prompt
    for ann in annotations:
        category = categories.get(ann.get("category_id"))
        image = images.get(ann.get("image_id"))
        if category is None or image is None:
            report.skip(path, f"annotation {ann.get('id')}", "unknown image_id or category_id")
            continue
        if image["id"] in labelled:
            report.skip(path, f"annotation {ann.get('id')}", f"image {image['id']} already labelled; duplicate dropped")
            continue
        labelled.add(image["id"])
        domain = category.get("supercategory", "")
        if domain not in out:
            continue
        name = str(image["file_name"])
        out[domain].setdefault(category["name"], []).append(
            LabeledImage(name, category["name"], lambda f=name: store.ref_inside(root, f, what="file_name")))
    return out


def read_inat(root: Path, store: ImageStore, report: BuildReport,
              domains: tuple[str, ...] = ("Birds", "Plants")) -> Pools:
    """Exemplars from ``train.json`` (``train_mini.json`` if that is all there is), tests from
    ``val.json``; only the categories whose ``supercategory`` is one of ``domains``."""
    root = Path(root)
    train = next((root / n for n in ("train.json", "train_mini.json") if (root / n).is_file()), None)
    val = root / "val.json"
    if train is None or not val.is_file():
        raise FileNotFoundError(f"{root}: needs train.json (or train_mini.json) and val.json ({LAYOUT_INAT})")
    train_sets = _read_coco_split(train, root, store, report, domains)
    test_sets = _read_coco_split(val, root, store, report, domains)
    pools: Pools = {}
    for domain in domains:
        classes = {}
        for name in sorted(set(train_sets[domain]) | set(test_sets[domain])):
            classes[name] = ClassPool(sorted(train_sets[domain].get(name, []), key=lambda i: i.key),
                                      sorted(test_sets[domain].get(name, []), key=lambda i: i.key))
        pools[domain] = _usable(classes, root / domain, report)
    return pools


def read_icl_source(root: Path, store: ImageStore, report: BuildReport, *, seed: int = 0) -> Pools:
    """Any of the above, by what the folder holds."""
    root = Path(root)
    if (root / "val.json").is_file():
        return read_inat(root, store, report)
    if is_hub_dataset(root):
        return read_hub_dataset(root, store, report)
    return read_class_folders(root, store, report, seed=seed)
