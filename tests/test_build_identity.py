"""Built parquet pinned byte for byte: refactors of a recipe or a reader must not change a row.

One ReadBench config per kind of rule (multiple choice, BABILong's rewritten prompt, the even
truncation of ``std_``) from the Hub-schema fixtures of ``test_readbench``, and two MMLongBench
release configs from the release of ``test_mmlb_release``, all with ``limit``. A hash that no
longer matches means the built rows changed (or the parquet writer did: then re-record
deliberately, after checking the rows).
"""
from __future__ import annotations

import hashlib
from pathlib import Path

from mmlbdata.build import build_configs
from test_mmlb_release import write_release
from test_readbench import sources, wiki_words  # noqa: F401  (its Hub-schema fixtures, reused)

READBENCH = {
    "readbench_mmlu_pro": "9ef0ef4082d29d67735cc061706e1825040bd50d83dd7d0834d2f4b10be1db84",
    "readbench_babilong_qa1_4k": "40866d193e3c206afcc853aac2dffaa176a7eb6142f23d77f7ba96232c7e3998",
    "readbench_std_longbench_hotpotqa_e_8k": "4e4fc894fdfa0943558d52a00542b9c9a44882d1d2e52839dc11c593990554f5",
}
RELEASE = {
    "vh_single_8k": "95690eb5a2c201ba54d1ebbd6a2f24960d3cc779c0c63b2c1f00522e99cc26f1",
    "mmlongdoc_8k": "1c743970ec5ff23506ba4531da7134c0a1ef374527ecac49329327eb3f5424eb",
}


def _parquet_hashes(out: Path, configs) -> dict[str, str]:
    hashes = {}
    for config in configs:
        [shard] = sorted((out / "data" / config).glob("*.parquet"))
        hashes[config] = hashlib.sha256(shard.read_bytes()).hexdigest()
    return hashes


def _build(names, sources, out: Path, tokenizer_path: Path, limit: int) -> dict[str, str]:
    results = build_configs(names, sources, out, limit=limit, tokenizer=tokenizer_path,
                            store_root=out.parent / "store", progress=False)
    assert all(r.ok for r in results), [r.error for r in results]
    return _parquet_hashes(out, names)


def test_readbench_parquet_is_unchanged(sources, tmp_path, tokenizer_path):
    assert _build(list(READBENCH), sources, tmp_path / "out", tokenizer_path, limit=2) == READBENCH


def test_release_parquet_is_unchanged(tmp_path, real_data, tokenizer_path):
    write_release(tmp_path / "release", real_data)
    built = _build(list(RELEASE), {"mmlb_release": tmp_path / "release"}, tmp_path / "out", tokenizer_path, limit=1)
    assert built == RELEASE
