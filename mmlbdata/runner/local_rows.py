"""Rows of a local parquet config read straight with pyarrow, a batch of rows at a time.

``datasets``' streaming turns every row into a one-row Arrow table before converting it (a
rebatching step, a schema check, a formatter per row): ~50 us a row, more than reading the row's
20 COCO images takes on the official side's per-row share (benchmarks/bench_vs_official.py's
reader). For a config whose data files are local parquet files read by the plain parquet
builder (the embedded layout, ``runner.smoke.write_built``), the rows are the same when pyarrow
reads them: the same files in the builder's order, each table cast to the builder's features as
its ``_cast_table`` casts it, no feature decoded (what ``decode(False)`` asks), converted
``to_pylist`` a batch at a time. Anything else (the Hub, the files layout's folder builder, a
config with column or filter options) goes through ``datasets`` streaming as before.
"""
from __future__ import annotations

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
