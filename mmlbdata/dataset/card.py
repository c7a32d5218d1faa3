"""The dataset README: YAML front matter that makes ``load_dataset(folder, config)`` work, and the card.

Two layers:

* :func:`update_readme` (called by the build layer after every config): ``configs`` maps each config to
  its parquet files (split ``test``); ``dataset_info`` carries the features and split sizes,
  written with ``datasets``' own ``DatasetInfo._to_yaml_dict`` so the Hub and ``datasets`` read it
  exactly as they read their own cards. Other configs' entries and the card's body are kept.
* :func:`render_card` (``mmlb card DIR``): the full card of one benchmark, from a template in
  ``mmlbdata/dataset/cards/`` (Jinja2) and what every built folder has: the manifests (family, dataset, metric,
  options, report) and the parquet rows (statistics recomputed by :mod:`mmlbdata.dataset.stats`, never
  decoding an image). A template starts with its own YAML header (benchmark name, the families it
  covers, task categories, source licences, citations) followed by a Jinja body that extends
  ``_base.md.jinja``; adding a benchmark means adding one such file.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

import yaml
from datasets import Features
from datasets.info import DatasetInfo
from datasets.splits import SplitDict, SplitInfo

from mmlbdata.core import locks
from mmlbdata.core.report import human_bytes
from mmlbdata.dataset.demo import is_demo
from mmlbdata.dataset.partitions import partition_dirs
from mmlbdata.dataset.writer import (
    IMAGE_FOLDER_HINT,
    IMAGES_DIR,
    SPLIT,
    ConfigStats,
    data_files_pattern,
    metadata_filename,
    metadata_path,
    read_manifest,
    write_image_folder_hint,
)

DEFAULT_BODY_MARK = "<!-- mmlb:default-body -->"
DEFAULT_BODY = DEFAULT_BODY_MARK + """
# mmlb

Long-context multimodal benchmark configs built with mmlbdata: every example is filled to its
token budget by the unified counter (Llama-2 text tokens + one image token per 28x28 pixels).
Run `mmlb card` on this folder for the full card.

```python
# needs datasets>={min_datasets} (pip install -U "datasets>={min_datasets}")
from datasets import load_dataset
ds = load_dataset("<this folder, or org/name on the Hub>", "{config}", split="test")
# filter / map on plain columns: name them (else datasets decodes 1,000 rows of images per batch)
subset = ds.filter(lambda n: n > 0, input_columns=["num_tokens"])
```
"""
PLOT_NAME = "stats.png"
# Streaming from the Hub, datasets 5.2 decodes a folder-based config's images in 32 threads,
# 64 rows ahead (builder.py: ds.decode(num_threads=config.decode_num_threads)): one row of
# vh_single_8k sent 249 MB and 20 rows of mmlongdoc_128k peaked at 8.3 GB. 0 decodes each row
# when it is read: bytes and memory of the rows read (benchmarks/bench_layout.py --hub-only).
# Older datasets (4.x to 5.1, which never read ahead) ignore the key with a logged warning.
STREAM_DECODE_THREADS = 0
MIN_DATASETS_VERSION = "4.0"  # metadata_filenames (tested: 3.6 fails, 4.0.0 / 5.1.0 / 5.2.0 load)
BASE_TEMPLATE = "_base.md.jinja"


# -- front matter -----------------------------------------------------------------------------
def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """``(yaml_dict, body)`` of a README; a README without front matter has an empty dict."""
    if text.startswith("---"):
        end = text.find("\n---", 3)
        if end != -1:
            # libyaml's safe loader where PyYAML has it: the same objects, ~6x faster on a release's
            # README (every `mmlb run`/`eval` reads it per config)
            meta = yaml.load(text[3:end], Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader)) or {}
            return meta, text[end + 4:].lstrip("\n")
    return {}, text


def folder_front_matter(folder: os.PathLike) -> dict[str, Any]:
    """The front matter of ``folder``'s README.md ({} when it has none)."""
    readme = Path(folder) / "README.md"
    return split_front_matter(readme.read_text(encoding="utf-8"))[0] if readme.is_file() else {}


def join_front_matter(meta: dict[str, Any], body: str) -> str:
    dumped = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{dumped}---\n\n{body.rstrip()}\n"


def config_yaml_entries(config: str, features: Features, stats: ConfigStats,
                        image_dirs: Optional[list[str]] = None, sizes: bool = True) -> tuple[dict, dict]:
    """The ``configs`` and ``dataset_info`` entries of one config (``image_dirs``: the
    ``images/<group>`` folders a files-layout config uses; None for an embedded config).
    ``sizes=False``: no split sizes, which ``datasets`` checks the rows against
    (NonMatchingSplitsSizesError): an entry that fits a config's previous build and its rebuild alike."""
    splits = SplitDict()
    splits.add(SplitInfo(name=SPLIT, num_bytes=stats.num_bytes, num_examples=stats.num_rows))
    info = DatasetInfo(features=features, splits=splits if sizes else None,
                       download_size=stats.num_bytes, dataset_size=stats.num_bytes)
    info_entry = {"config_name": config, **info._to_yaml_dict()}
    return config_data_entry(config, image_dirs), info_entry


def config_data_entry(config: str, image_dirs: Optional[list[str]]) -> dict:
    """Where ``datasets`` finds the config's rows. Files layout: its metadata file (named in
    ``metadata_filenames`` so configs sharing a folder do not read each other's), the two PNGs of
    :data:`~mmlbdata.dataset.writer.IMAGE_FOLDER_HINT` (so ``datasets`` picks its folder-based image
    builder for the whole folder whichever config is listed first, text-only ones included) and
    its image partitions; embedded: its shards."""
    if image_dirs is None:
        return {"config_name": config, "data_files": [{"split": SPLIT, "path": data_files_pattern(config)}]}
    paths = [metadata_filename(config), *IMAGE_FOLDER_HINT] + [f"{folder}/**" for folder in image_dirs]
    return {"config_name": config, "data_files": [{"split": SPLIT, "path": paths}],
            "metadata_filenames": [metadata_filename(config)], "decode_num_threads": STREAM_DECODE_THREADS}


def streamed_data_files(folder: os.PathLike, config: str) -> Optional[list[str]]:
    """The data files a streamed read of a files-layout config of a local ``folder`` needs: its
    README entry's, less the image partitions (None: an embedded config, or no such entry).

    A streamed row reads each image by its path beside the metadata file; the partitions are in
    the entry only so that an in-memory load from the Hub downloads them. ``datasets`` resolves
    and sorts every file they hold before the first row (about 0.2 ms a file: 0.5 s warm and 2.4 s
    cold for the 2,200 images of a 128K Visual Haystack partition), so the runner, which streams,
    names the rest and gets the same rows and features."""
    meta = folder_front_matter(folder)
    entry = next((e for e in meta.get("configs") or [] if isinstance(e, dict) and e.get("config_name") == config), {})
    splits = [s for s in entry.get("data_files") or [] if isinstance(s, dict) and s.get("split") == SPLIT]
    if not entry.get("metadata_filenames") or not splits or not isinstance(splits[0].get("path"), list):
        return None
    return [path for path in splits[0]["path"] if not path.endswith("/**")]


def with_image_folder_hint(entry: dict) -> dict:
    """A files-layout ``configs`` entry written before the hint existed (metadata, then partitions:
    a folder built by an earlier mmlbdata) with the hint's files after its metadata, as
    :func:`config_data_entry` writes it; any other entry as it is."""
    if not entry.get("metadata_filenames"):
        return entry
    for split in entry.get("data_files") or []:
        paths = split.get("path") if isinstance(split, dict) else None
        if not isinstance(paths, list) or not paths or not isinstance(paths[0], str):
            continue
        location = paths[0][:paths[0].rfind("/") + 1]  # hf://datasets/<repo>@<branch>/ on a branch's card
        hint = [location + name for name in IMAGE_FOLDER_HINT]
        if not set(hint) <= set(paths):
            split["path"] = paths[:1] + hint + [p for p in paths[1:] if p not in hint]
    return entry


def config_image_dirs(folder: os.PathLike, config: str) -> Optional[list[str]]:
    """The image partitions (``images/<family>/<owner>``) of a files-layout config (None: embedded layout)."""
    from mmlbdata.dataset.stats import image_paths

    path = metadata_path(folder, config)
    return image_dirs(image_paths(path)) if path.is_file() else None


def written_image_dirs(stats: ConfigStats) -> Optional[list[str]]:
    """What :func:`config_image_dirs` reads, from what the writer knows: a files-layout config's
    partitions (the writer records them after re-partitioning); an embedded config, None."""
    return stats.image_dirs if stats.layout == "files" else None


def image_dirs(names: Optional[Iterable[str]]) -> Optional[list[str]]:
    """The partitions (``images/<family>/<owner>``) a files-layout config's image paths lie in, so
    its data files name only images of its own rows' partitions (None stays None: an embedded
    config, e.g. :attr:`mmlbdata.dataset.stats.Distribution.image_files`)."""
    return None if names is None else partition_dirs(names)


def _upsert(entries: list[dict], entry: dict) -> list[dict]:
    kept = [e for e in entries if e.get("config_name") != entry["config_name"]]
    return sorted(kept + [entry], key=lambda e: e.get("config_name", ""))


def entries_without_hint(folder: os.PathLike) -> list[str]:
    """The files-layout configs whose README entry does not name the image-folder hint (a folder
    built by an earlier mmlbdata: datasets may read all of it as plain parquet until its README is
    rewritten, which any build into it, or ``mmlb card``, does)."""
    meta = folder_front_matter(folder)
    return sorted(entry.get("config_name", "") for entry in meta.get("configs") or []
                  if isinstance(entry, dict) and entry.get("metadata_filenames")
                  and with_image_folder_hint(json.loads(json.dumps(entry))) != entry)


def update_readme(out_dir: os.PathLike, config: str, features: Features, stats: ConfigStats,
                  written: bool = False, sizes: bool = True) -> Path:
    """Add or replace ``config`` in the folder's README front matter (atomic write).
    ``written``: ``stats`` come from the writer that has just written the config, which knows its
    image partitions (the build passes it, so the metadata file is not read back); otherwise the
    partitions are read from the config's metadata file."""
    dirs = written_image_dirs(stats) if written else None
    if dirs is None and (not written or stats.layout == "files"):  # not known from the writer: read
        dirs = config_image_dirs(out_dir, config)
    entries = config_yaml_entries(config, features, stats, dirs, sizes)
    return _upsert_readme(Path(out_dir) / "README.md", [entries])


def sync_readme(folder: os.PathLike, configs: Optional[list[str]] = None) -> Path:
    """Make the README's entries of ``configs`` (default: all built) match the shards on disk.

    Used after a resumed build: a crash between a config's move into place and its README update
    must not leave a complete config unlisted.
    """
    from mmlbdata.dataset.stats import configs_in

    folder = Path(folder)
    entries = [yaml_entries_from_parquet(folder, config) for config in configs or configs_in(folder)]
    return _upsert_readme(folder / "README.md", entries)


def _upsert_readme(path: Path, entries: list[tuple[dict, dict]]) -> Path:
    """Add or replace ``(configs entry, dataset_info entry)`` pairs; other entries and the body stay."""
    with locks.hold(readme_lock_path(path)):  # parallel config builds share one README
        meta, body = split_front_matter(path.read_text()) if path.exists() else ({}, "")
        configs = meta.get("configs") or []
        infos = meta.get("dataset_info") or []
        if isinstance(infos, dict):
            infos = [infos]
        for config_entry, info_entry in entries:
            configs, infos = _upsert(configs, config_entry), _upsert(infos, info_entry)
        configs = [with_image_folder_hint(entry) for entry in configs]  # entries of an older build too
        if any(entry.get("metadata_filenames") for entry in configs):
            write_image_folder_hint(path.parent)
        meta["configs"], meta["dataset_info"] = configs, infos
        if configs and (not body.strip() or body.startswith(DEFAULT_BODY_MARK)):
            # the placeholder names the first config in sorted order, so the README does not
            # depend on which config of a parallel or resumed build finished first
            body = DEFAULT_BODY.format(config=configs[0]["config_name"], min_datasets=MIN_DATASETS_VERSION)
        _write_atomic(path, join_front_matter(meta, body))
    return path


def readme_lock_path(readme: Path) -> Path:
    """A hidden lock beside the README, deleted by its holder (no ``README.md.lock`` left behind)."""
    return readme.with_name(".mmlb-README.lock")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def config_features(folder: os.PathLike, config: str) -> Features:
    """A built config's features, from its first shard's schema metadata (no row read)."""
    import pyarrow.parquet as pq

    from mmlbdata.dataset.stats import is_files_layout, shard_files

    files = shard_files(Path(folder), config)
    if not files:
        raise FileNotFoundError(f"{folder}/data/{config}: no parquet shard")
    schema = pq.read_schema(files[0])
    if is_files_layout(files[0]):  # the loaded features ride in the metadata, not the file's columns
        recorded = json.loads((schema.metadata or {}).get(b"huggingface", b"{}")).get("info", {}).get("features")
        if recorded:
            return Features.from_dict(recorded)
    return Features.from_arrow_schema(schema)


def yaml_entries_from_parquet(folder: os.PathLike, config: str) -> tuple[dict, dict]:
    """``configs`` / ``dataset_info`` entries recomputed from the shards on disk."""
    from mmlbdata.dataset.stats import config_distribution

    dist = config_distribution(Path(folder), config)
    stats = ConfigStats(config, num_rows=len(dist.num_tokens), num_bytes=dist.num_bytes)
    return config_yaml_entries(config, config_features(folder, config), stats, image_dirs(dist.image_files))


# -- templates --------------------------------------------------------------------------------
def cards_dir() -> Path:
    """``$MMLB_CARDS_DIR``, else the templates shipped inside the package (``mmlbdata/dataset/cards/``).

    They are package data, so an installed wheel renders cards without a source checkout.
    """
    env = os.environ.get("MMLB_CARDS_DIR")
    return Path(env) if env else Path(__file__).resolve().parent / "cards"


def _templates_folder(directory: Optional[Path]) -> Path:
    folder = Path(directory or cards_dir())
    if not (folder / BASE_TEMPLATE).is_file():
        raise FileNotFoundError(f"card templates not found in {folder} (no {BASE_TEMPLATE}): point "
                                "MMLB_CARDS_DIR / --templates at a folder of templates like mmlbdata/dataset/cards/")
    return folder


@dataclass
class CardTemplate:
    """One benchmark's template: its YAML header (``meta``) and its Jinja body (``source``)."""

    name: str
    meta: dict[str, Any]
    source: str
    path: Path

    @property
    def families(self) -> list[str]:
        return list(self.meta.get("families") or [])


def load_templates(directory: Optional[Path] = None) -> dict[str, CardTemplate]:
    """Every ``cards/<name>.md.jinja`` except the ``_`` partials, by name."""
    directory = _templates_folder(directory)
    templates = {}
    for path in sorted(directory.glob("*.md.jinja")):
        if path.name.startswith("_"):
            continue
        meta, body = split_front_matter(path.read_text())
        if "benchmark" not in meta:
            raise ValueError(f"{path}: the template's YAML header needs a 'benchmark' key")
        name = path.name[: -len(".md.jinja")]
        templates[name] = CardTemplate(name, meta, body, path)
    return templates


def benchmark_families(directory: Optional[Path] = None) -> dict[str, list[str]]:
    """Benchmark template name -> the builder families it covers (``mmlb build --all``)."""
    return {name: t.families for name, t in load_templates(directory).items()}


def select_template(families: set[str], name: Optional[str] = None,
                    directory: Optional[Path] = None) -> CardTemplate:
    """The named template, else the one whose ``families`` cover every family of the folder."""
    templates = load_templates(directory)
    if name:
        if name not in templates:
            raise KeyError(f"no card template {name!r}; known: {', '.join(templates)}")
        return templates[name]
    matches = [t for t in templates.values() if families and families <= set(t.families)]
    if len(matches) == 1:
        return matches[0]
    known = ", ".join(f"{n} ({', '.join(t.families)})" for n, t in templates.items())
    why = "several templates match" if matches else "no template covers all of them"
    raise LookupError(f"families {sorted(families)}: {why}; pass --benchmark (templates: {known})")


# -- the card ---------------------------------------------------------------------------------
def size_category(rows: int) -> str:
    """The Hub's ``size_categories`` bucket of a row count."""
    for limit, label in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"),
                         (1_000_000, "100K<n<1M"), (10_000_000, "1M<n<10M")):
        if rows < limit:
            return label
    return "n>10M"


def format_stats(summary: dict, decoded_bytes: Optional[int] = None) -> dict[str, str]:
    """The card's rendering of one config's statistics (tests parse it back).

    ``size`` is on disk; ``decoded`` is what a reader materialises (every image slot), from the
    manifest: deduplicated images make the first much smaller than the second.
    """
    return {
        "decoded": "-" if decoded_bytes is None else human_bytes(decoded_bytes),
        "rows": str(summary["rows"]),
        "images": str(summary["images"]),
        "images_per_row": f"{summary['images_per_row']:.1f}",
        "tokens_min": str(summary["tokens_min"]),
        "tokens_mean": f"{summary['tokens_mean']:.1f}",
        "tokens_max": str(summary["tokens_max"]),
        "fill_ratio": f"{summary['fill_ratio']:.3f}" if summary.get("rows_with_length", 1) else "-",
        "size": human_bytes(summary["bytes"]),
    }


def _family_info(family: str) -> dict[str, str]:
    """Description, homepage, licence and citation the family's builder declares (if installed)."""
    try:
        from mmlbdata.dataset.registry import families

        builder = families().get(family)
    except Exception:  # a broken third-party entry point must not break the card
        builder = None
    if builder is None:
        return {"name": family}
    return {"name": family, "description": builder.DESCRIPTION, "homepage": builder.HOMEPAGE,
            "license": builder.LICENSE, "citation": builder.CITATION,
            "sources": ", ".join(builder.SOURCES)}


def card_context(folder: os.PathLike, configs: Optional[list[str]] = None) -> dict[str, Any]:
    """Everything a template can use, from the manifests and the parquet files."""
    from mmlbdata.dataset.stats import config_distribution, configs_in, stored_bytes

    folder = Path(folder)
    names = configs or configs_in(folder)
    if not names:
        raise FileNotFoundError(f"no built config under {folder}")
    rows, dists = [], []
    for name in names:
        dist = config_distribution(folder, name)
        dists.append(dist)
        summary = dist.summary()
        manifest = read_manifest(folder, name) or {}
        report = manifest.get("report") or {}
        rows.append({
            "name": name, "family": manifest.get("family", ""), "dataset": manifest.get("dataset", ""),
            "length": manifest.get("length"), "metric": manifest.get("metric", ""),
            # the MMLongBench protocol the prompts follow is shown with the options (mmlbdata.official.protocol)
            "options": {**(manifest.get("options") or {}), **({"protocol": manifest["protocol"]}
                                                               if manifest.get("protocol") else {})},
            "seed": manifest.get("seed"),
            "limit": manifest.get("limit"), "sources": manifest.get("sources") or {},
            "demo": is_demo(manifest),
            "skipped": report.get("num_skipped", 0), "notes": report.get("notes") or [],
            "stats": summary,
            "fmt": format_stats(summary, (manifest.get("stats") or {}).get("image_bytes_decoded")),
            "provenance": manifest.get("provenance", ""),
            "release_file": manifest.get("release_file"), "subset": manifest.get("subset"),
            "official_lengths": manifest.get("official_lengths"),
        })
    family_names = sorted({r["family"] for r in rows if r["family"]})
    datasets: dict[tuple, dict] = {}  # configs sharing a dataset and its build parameters
    for r in rows:
        key = (r["dataset"], r["family"], r["metric"], json.dumps(r["options"], sort_keys=True, default=str))
        entry = datasets.setdefault(key, {"name": r["dataset"], "family": r["family"], "metric": r["metric"],
                                          "options": r["options"], "configs": []})
        entry["configs"].append(r["name"])
    total_rows = sum(r["stats"]["rows"] for r in rows)
    from mmlbdata.dataset.paper_stats import compare, references, table_rows

    paper = compare(dists)
    return {
        "paper_comparison": table_rows(paper), "paper_references": references(paper),
        "configs": rows, "datasets": list(datasets.values()), "dists": dists,
        "families": [_family_info(f) for f in family_names], "family_names": family_names,
        "total_rows": total_rows, "total_images": sum(r["stats"]["images"] for r in rows),
        "total_bytes": human_bytes(stored_bytes(folder, dists)),
        "metrics": sorted({r["metric"] for r in rows if r["metric"]}),
        "notes": sorted({n for r in rows for n in r["notes"]}),
        "demo_configs": [r["name"] for r in rows if r["demo"]],
        "provenances": sorted({r["provenance"] for r in rows if r["provenance"]}),
        "official": [r for r in rows if r["provenance"] == "official release"],
        "deviations": scoring_deviations({r["metric"] for r in rows if r["metric"]}),
    }


def scoring_deviations(metrics: set[str]) -> str:
    """The rows of the evaluator's default-vs-official table that concern these metrics."""
    from mmlbdata.official.deviations import render_markdown

    return render_markdown(sorted(metrics)) if metrics else ""


def _jinja_env(directory: Path):
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(directory)), undefined=jinja2.StrictUndefined,
                             keep_trailing_newline=True, trim_blocks=True, lstrip_blocks=True)
    env.filters["tojson"] = lambda value: json.dumps(value, sort_keys=True)
    return env


def render_card(folder: os.PathLike, *, benchmark: Optional[str] = None, repo_id: Optional[str] = None,
                plot: bool = True, templates_dir: Optional[Path] = None,
                configs: Optional[list[str]] = None, report: Optional[dict] = None) -> Path:
    """Write ``folder/README.md`` (and ``stats.png`` with ``plot``) for the folder's benchmark.
    ``report``: the content of an ``mmlb eval`` report.json; its scores, and their places among the
    papers' models where it has a ``paper_comparison``, become the card's evaluation section."""
    from huggingface_hub import DatasetCard, DatasetCardData

    from mmlbdata.dataset.card_evaluation import section

    folder = Path(folder)
    directory = _templates_folder(templates_dir)
    context = card_context(folder, configs)
    template = select_template(set(context["family_names"]), benchmark, directory)
    meta = template.meta
    plot_name = None
    if plot:
        from mmlbdata.dataset.stats import plot_distributions

        plot_distributions(context["dists"], folder / PLOT_NAME, title=meta.get("pretty_name", ""))
        plot_name = PLOT_NAME
    from mmlbdata.dataset.stats import configs_in

    # the YAML lists every built config, even when the body describes a subset
    entries = [yaml_entries_from_parquet(folder, name) for name in configs_in(folder)]
    licenses = sorted({v["id"] if isinstance(v, dict) else str(v)
                       for v in (meta.get("licenses") or {}).values()}) or ["other"]
    if context["demo_configs"] and len(context["demo_configs"]) == len(context["configs"]):
        licenses = ["apache-2.0"]  # drawn by mmlbdata.dataset.demo: none of the sources' licences apply
    card_data = DatasetCardData(
        pretty_name=meta.get("pretty_name", meta["benchmark"]),
        license=licenses,
        language=meta.get("language", ["en"]),
        task_categories=meta.get("task_categories", []),
        size_categories=[size_category(context["total_rows"])],
        tags=meta.get("tags", []),
        configs=[c for c, _ in entries],
        dataset_info=[i for _, i in entries],
    )
    repo = repo_id or "<org>/<name>"
    # the body without the template's YAML header (the loader would render that too)
    body = _jinja_env(directory).from_string(template.source).render(
        meta=meta, repo_id=repo, folder_name=folder.name, plot=plot_name, split=SPLIT,
        min_datasets=MIN_DATASETS_VERSION, evaluation=section(report), **context)
    card = DatasetCard(f"---\n{card_data.to_yaml()}\n---\n\n{body.strip()}\n")
    path = folder / "README.md"
    with locks.hold(readme_lock_path(path)):
        if any(c.get("metadata_filenames") for c, _ in entries):
            write_image_folder_hint(folder)
        _write_atomic(path, str(card))
    return path
