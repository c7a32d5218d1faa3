"""Rows of a local parquet config read straight with pyarrow, a batch of rows at a time.

``datasets``' streaming turns every row into a one-row Arrow table before converting it (a
rebatching step, a schema check, a formatter per row): ~50 us a row, more than reading the row's
20 COCO images takes on the official side's per-row share (benchmarks/bench_vs_official.py's
reader). For a config whose data files are local parquet files read by the plain parquet
builder (the embedded layout, ``runner.smoke.write_built``), the rows are the same when pyarrow
reads them: the same files in the builder's order, each table cast to the builder's features as
its ``_cast_table`` casts it, no feature decoded (what ``decode(False)`` asks), converted
``to_pylist`` a batch at a time. A files-layout config (``mmlb build``'s default) is read from
its metadata parquet the same way (see :func:`local_files_layout`). Both are recognised from the
README entry ``mmlb build`` writes (:func:`readme_parquet_files`, :func:`local_files_layout`);
another local entry asks ``load_dataset_builder`` (:func:`local_parquet_files`); anything else
(the Hub, an entry with other builder options) goes through ``datasets`` streaming as before.
"""
from __future__ import annotations

import functools
import os
from typing import Iterator, Optional

#: Python objects made from one batch at most (image bytes included): the embedded layout's 100 MB
#: row groups are converted a few rows at a time, a files-layout row group (paths only) at once
BATCH_BYTES = 16 << 20


def local_parquet_files(builder) -> Optional[list[str]]:
    """The test split's files when ``builder`` is the plain parquet builder over local files with
    no column, filter or feature options; None otherwise (stream with ``datasets``)."""
    from datasets.packaged_modules.parquet.parquet import Parquet

    config = builder.config
    if not isinstance(builder, Parquet):  # the files layout: the folder-based (imagefolder) builder
        return None
    if getattr(config, "columns", None) is not None or getattr(config, "filters", None) is not None:
        return None
    files = list((config.data_files or {}).get("test") or [])
    if not files or any("://" in str(f) or not os.path.isfile(f) for f in files):
        return None
    return [str(f) for f in files]


def parquet_rows(files: list[str], features) -> Iterator[dict]:
    """Every row of ``files`` in order, as ``datasets`` streams them with ``decode(False)``."""
    import pyarrow.parquet as pq
    from datasets import Features
    from datasets.table import table_cast

    schema = features.arrow_schema if features is not None else None
    for path in files:
        with pq.ParquetFile(path) as parquet:
            if schema is None:  # the builder's rule: the first file's features for every file
                schema = Features.from_arrow_schema(parquet.schema_arrow).arrow_schema
            for batch in parquet.iter_batches(batch_size=_batch_rows(parquet.metadata)):
                table = batch if batch.schema == schema else table_cast(_as_table(batch), schema)
                yield from table.to_pylist()


def _as_table(batch):
    import pyarrow as pa

    return pa.Table.from_batches([batch])


def _batch_rows(metadata) -> int:
    """Rows per conversion: :data:`BATCH_BYTES` of the file's average uncompressed row, 1 to 1024."""
    rows = max(metadata.num_rows, 1)
    size = sum(metadata.row_group(i).total_byte_size for i in range(metadata.num_row_groups))
    return max(1, min(1024, BATCH_BYTES * rows // max(size, 1)))


# -- the files layout (mmlb build's default) --------------------------------------------------------
# datasets reads it with its folder-based image builder, which first resolves the config's data
# files: every image under its images/ partitions (fsspec info and origin metadata per file,
# 33 ms for 79 files, growing with the partition) only to learn that the rows come from the
# metadata parquet. Its rows are that file's rows with each ``<col>_file_names`` list turned into
# ``<col>``: ``{"bytes": None, "path": <metadata dir>/<name>}`` per image, columns in the order of
# the config's features.

def readme_entries(data_dir, config: str) -> Optional[tuple[dict, Optional[dict]]]:
    """``(configs entry, dataset_info entry or None)`` of ``config`` in a local folder's README
    front matter; None for the Hub, a folder without README or a config not listed once."""
    from mmlbdata.dataset.card import split_front_matter

    readme = os.path.join(str(data_dir), "README.md")
    if "://" in str(data_dir) or not os.path.isfile(readme):
        return None
    with open(readme, encoding="utf-8") as handle:
        meta, _ = split_front_matter(handle.read())
    entry = _entry(meta.get("configs"), config)
    return None if entry is None else (entry, _entry(meta.get("dataset_info"), config))


def readme_parquet_files(data_dir, config: str):
    """``(files, features or None)`` for a README entry that is one test-split pattern of local
    parquet files (``data/<config>/test-*.parquet``, the embedded layout), resolved as datasets
    resolves it (matches sorted, hidden files and links to nothing left out); None otherwise:
    :func:`local_parquet_files` asks ``load_dataset_builder`` (~3 ms: two thread pools, dill
    hashing of the config) the same question."""
    import glob

    from datasets import Features

    found = readme_entries(data_dir, config)
    if found is None or set(found[0]) - {"config_name", "data_files"}:
        return None
    files = found[0].get("data_files")
    if not isinstance(files, list) or len(files) != 1 or not isinstance(files[0], dict) \
            or files[0].get("split") != "test" or set(files[0]) != {"split", "path"}:
        return None
    pattern = files[0]["path"]
    if not isinstance(pattern, str) or not pattern.endswith(".parquet") or os.path.isabs(pattern) \
            or any(c in pattern for c in "[]{}\\") or "**" in pattern or ".." in pattern:
        return None
    matched = sorted(glob.glob(os.path.join(glob.escape(os.path.abspath(str(data_dir))), pattern)))
    matched = [path for path in matched if os.path.isfile(path)]
    info = found[1]
    if not matched or (info is not None and "features" not in info):
        return None
    return matched, (Features._from_yaml_list(info["features"]) if info is not None else None)


def local_files_layout(data_dir, config: str):
    """``(metadata parquet, features, image columns)`` when ``data_dir`` is a local folder whose
    README gives ``config`` exactly the files-layout entry ``mmlb build`` writes (its metadata file
    named in ``metadata_filenames``, image folders as ``<dir>/**``, no other builder option) and
    whose images are plain ``Image`` values or lists of them; None otherwise (use ``datasets``)."""
    from datasets import Features

    from mmlbdata.dataset.writer import metadata_filename

    found = readme_entries(data_dir, config)
    if found is None:
        return None
    (entry, info), name = found, metadata_filename(config)
    if info is None or "features" not in info or not _is_files_entry(entry, name):
        return None
    metadata = os.path.join(os.path.abspath(str(data_dir)), name)
    if not os.path.isfile(metadata):
        return None
    features = Features._from_yaml_list(info["features"])
    columns = _image_columns(features)
    return (metadata, features, columns) if columns is not None else None


def _entry(entries, config: str):
    if isinstance(entries, dict):  # a card with one config may write its dataset_info as a mapping
        entries = [entries]
    matches = [e for e in entries or [] if isinstance(e, dict) and e.get("config_name") == config]
    return matches[0] if len(matches) == 1 else None


def _is_files_entry(entry: dict, name: str) -> bool:
    from mmlbdata.dataset.writer import IMAGE_FOLDER_HINT

    if set(entry) - {"config_name", "data_files", "metadata_filenames", "decode_num_threads"}:
        return False
    files = entry.get("data_files")
    if entry.get("metadata_filenames") != [name] or not isinstance(files, list) or len(files) != 1:
        return False
    paths = files[0].get("path") if isinstance(files[0], dict) and files[0].get("split") == "test" else None
    return isinstance(paths, list) and paths[:1] == [name] and all(
        isinstance(p, str) and (p.endswith("/**") or p in IMAGE_FOLDER_HINT) for p in paths[1:])


def _image_columns(features) -> Optional[dict[str, bool]]:
    """Column -> whether it holds a list of images; None when some column needs decoding of
    another kind (audio, video, images nested deeper): those stay with ``datasets``."""
    from datasets import Image, LargeList, List, Sequence
    from datasets.features.features import require_decoding

    columns = {}
    for column, feature in features.items():
        if isinstance(feature, Image):
            columns[column] = False
        elif isinstance(feature, (List, LargeList, Sequence)) and isinstance(feature.feature, Image):
            columns[column] = True
        elif require_decoding(feature):
            return None
    return columns


def files_layout_rows(metadata: str, features, image_columns: dict[str, bool]) -> Iterator[dict]:
    """The metadata file's rows as the folder-based builder gives them (``decode(False)``)."""
    import pyarrow.parquet as pq

    folder = os.path.dirname(metadata)
    order = list(features)
    with pq.ParquetFile(metadata) as parquet:
        for batch in parquet.iter_batches(batch_size=_batch_rows(parquet.metadata)):
            for row in batch.to_pylist():
                for column, many in image_columns.items():
                    if many:
                        names = row.pop("file_names", None) or row.pop(column + "_file_names", None)
                        row[column] = None if names is None else [_image(folder, n) for n in names]
                    else:
                        name = row.pop("file_name", None) or row.pop(column + "_file_name", None)
                        row[column] = _image(folder, name)
                yield {column: row.get(column) for column in order}


def _image(folder: str, name: Optional[str]) -> Optional[dict]:
    return None if name is None else {"bytes": None, "path": _image_path(folder, name)}


@functools.lru_cache(maxsize=8192)  # rows share images (a Visual Haystack config: 960 uses of 79 files)
def _image_path(folder: str, name: str) -> str:
    """``name`` inside ``folder``, refused as the folder-based builder refuses it (a URL, an
    absolute path or one leaving the folder could read any file on the host)."""
    relative = os.path.normpath(name).replace("\\", "/")
    if "://" in name or os.path.isabs(name) or os.path.isabs(relative) or relative == ".." \
            or relative.startswith("../"):
        raise ValueError(f"Invalid metadata file_name '{name}': `file_name` must be a relative path "
                         f"pointing inside the directory containing the metadata file")
    return os.path.join(folder, relative)
