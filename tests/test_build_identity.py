"""Built rows pinned: refactors of a recipe, a reader or the writer must not change a row.

One ReadBench config per kind of rule (multiple choice, BABILong's rewritten prompt, the even
truncation of ``std_``) from the Hub-schema fixtures of ``test_readbench``, and two MMLongBench
release configs from the release of ``test_mmlb_release``, all with ``limit``. What is pinned is
the rows' content (every field, each image's bytes, in order), not the parquet bytes: the same
rows must come back whichever layout wrote them (files or embedded), and a parquet library's
version string in the file footer is no change of the benchmark. A digest that no longer matches
means the built rows changed: re-record deliberately, after checking the rows. (Recorded
when the files layout landed: the embedded build of the code before it gave the same digests.)
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mmlbdata.dataset.build import build_configs
from mmlbdata.exports import iter_rows
from test_mmlb_release import write_release
from test_readbench import sources, wiki_words  # noqa: F401  (its Hub-schema fixtures, reused)

READBENCH = {
    "readbench_mmlu_pro": "c39326d92536a6c7f3a8e10f2e2f93f81796808eb31e0d2b778e7303c9b1401c",
    "readbench_babilong_qa1_4k": "746c4354ecbe6b59e74edeb001d620411f5f97a639a83ee9d3350e32a53c4a84",
    "readbench_std_longbench_hotpotqa_e_8k": "743241a462129f62c856c92ea19d461c9c5f1314552f3fadf9cc5a193983826c",
}
RELEASE = {
    "vh_single_8k": "1da2ffbaf3e9c24a4c233580698ab15846bfe597af6e08f88fd5c0264484c49f",
    "mmlongdoc_8k": "b8d3bc398c5cae6860bcf1534b3a1b0934260e0d3f4b9fc3b9205b277d90553b",
}


def rows_digest(out: Path, config: str) -> str:
    """SHA-256 over the config's rows in order: each row's fields as canonical JSON (images
    replaced by their bytes' SHA-256, so the path an image is stored under does not count)."""
    digest = hashlib.sha256()
    for row in iter_rows(out, config):
        images = [hashlib.sha256(image["bytes"]).hexdigest() for image in row.pop("images") or []]
        digest.update(json.dumps({**row, "images": images}, sort_keys=True, default=str).encode())
    return digest.hexdigest()


def _build(names, sources, out: Path, tokenizer_path: Path, limit: int, layout: str) -> dict[str, str]:
    results = build_configs(names, sources, out, limit=limit, tokenizer=tokenizer_path,
                            store_root=out.parent / "store", progress=False, layout=layout)
    assert all(r.ok for r in results), [r.error for r in results]
    return {name: rows_digest(out, name) for name in names}


@pytest.mark.parametrize("layout", ["files", "embedded"])
def test_readbench_rows_are_unchanged(sources, tmp_path, tokenizer_path, layout):
    assert _build(list(READBENCH), sources, tmp_path / "out", tokenizer_path, 2, layout) == READBENCH


@pytest.mark.parametrize("layout", ["files", "embedded"])
def test_release_rows_are_unchanged(tmp_path, real_data, tokenizer_path, layout):
    write_release(tmp_path / "release", real_data)
    built = _build(list(RELEASE), {"mmlb_release": tmp_path / "release"}, tmp_path / "out", tokenizer_path, 1, layout)
    assert built == RELEASE
