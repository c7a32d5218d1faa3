"""Built rows pinned: refactors of a recipe, a reader or the writer must not change a row.

One ReadBench config per kind of rule (multiple choice, BABILong's rewritten prompt, the even
truncation of ``std_``) from the Hub-schema fixtures of ``test_readbench``, and two MMLongBench
release configs from the release of ``test_mmlb_release``, all with ``limit``. What is pinned is
the rows' content (every field, each image's bytes, in order), not the parquet bytes: the same
rows must come back whichever layout wrote them (files or embedded), and a parquet library's
version string in the file footer is no change of the benchmark. A digest that no longer matches
means the built rows changed: re-record deliberately, after checking the rows. (Recorded
when the files layout landed: the embedded build of the code before it gave the same digests.)

``RECIPES`` pins one or more configs of every family registered under ``mmlb.builders``, built
from its recipe (not replayed from the release) on the real shared samples, or on the
release-schema fixtures of the family's own tests where no real sample exists; the cases and
their sources are in ``identity_sources`` (shared with scripts/build_fingerprint.py). Recorded
at bc9d6da, before modules moved into layer subpackages, to prove that move changes no row;
``RECIPE_PARQUET`` pins the same builds' parquet files byte for byte (under the pyarrow that
wrote them); re-recorded for issue 31, whose image partitions put ``images/<family>/<users>/``
into the metadata's paths (the rows pins did not change), with ``MMLB_PRINT_PINS=1``.
``scripts/build_fingerprint.py`` hashes every built file (images, manifests, README)
for a before/after comparison by hand.
"""
from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

import identity_sources
from mmlbdata.dataset.build import build_configs
from mmlbdata.dataset.registry import families
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

RECIPES = {
    "vh_single_8k": "12b189e23fcec42832953b939d238e0d4cebf20a84d7b274cafdaf649311bdc3",  # vh
    "vh_multi_8k": "1fa03658021c62d9e26f72cf1b7ce11f1e62943db81163cef56f5c3dd3895f4e",  # vh
    "longdocurl_8k": "8d296d2a04692d08c0aca13a288cb7079740e01932a08d160a53656744176e32",  # docvqa
    # re-pinned by #35: List answers are the release's JSON text (["A", "B"]), no longer ['A', 'B']
    "mmlongdoc_8k": "acc226d8faf0f63b35b4137f03863853e3417a89a2a102426e298a89e903e671",  # docvqa
    "mmlongbench_doc_8k": "b2e14a0abd0b25a83d114feec9065084f892c2281c395ad3db08d65d7331511c",  # mmlongbench_doc
    "readbench_mmlu_pro": "c39326d92536a6c7f3a8e10f2e2f93f81796808eb31e0d2b778e7303c9b1401c",  # readbench
    "multi_lexsum_8k": "19b16dc779cd6296fd7ea03c560853dd85d6662f4c5cdd9f0bd0442401607563",  # summ
    "gov_report_8k": "94ce35baba2fed5dcf5c5bcf7dbef9b24a5c4dcf6bc619c0f3f69136118d0f7b",  # summ
    "lvb_val_8k": "4eb907ec6c193b8e12a46e679ff79f292bcfeb2fb4eb75605047357b7846ead4",  # lvb
    "viquae_8k": "d45efefd8e47ce746246df7a8373cdb39d91a3f35c6c86f2009a606aaf43d399",  # vrag
    "food101_8k": "41634dbf211ce1b8acc549b51fa3d6a990a44e53c0049bc8741f7e3f269112d7",  # icl
    "mmneedle_n2_k2_8k": "f380a8f9190923f6e3cad0b87d574890c3a2d6c667bdc8d6b3b6f91d61e70e55",  # mmneedle
    "mmneedle_m10_n2_k2": "fc0670107efb3c7ac037159fd2d8ec3b2bddf44b76c3c995a87bf564322bf90c",  # mmneedle
    "mm_niah_retrieval_image_8k": "d42d34b7bfc441751628b34a2014af39b3d6e9d3ede768a55fe6708160c01cbe",  # mmniah
    "mm_niah_counting_text_8k": "74a6ebe8877079a33b7302d1a608c3d2111e428a01bd5c2aa099ddc36703c3f2",  # mmniah
    # memlens: recorded when the family was added (issue 34), the same in both layouts; re-pinned by
    # #47: meta.num_tokens_at_800px added (every other field and image of the three rows unchanged)
    "memlens_32k": "99240092e20fd5550b3554a406ac18ac358df3fdda33b0c596605e1fbb8afe09",  # memlens
}

# The same builds' parquet bytes (``<config>.metadata.parquet``), recorded at bc9d6da, before the
# layer packages (#24), and unchanged by them. Bytes also depend on the parquet library (its
# version is in the footer; its encoders may change), so they are compared only under the pyarrow
# that wrote them; the row digests above hold under any.
PARQUET_PYARROW = "26.0.1"
RECIPE_PARQUET = {
    "vh_single_8k": "d4ee7a012a2716d1025a9e778cc929dad3d72afcb31c1e4081afe77cb47b4c00",
    "vh_multi_8k": "cf2b49cda0414e620bd7a334b058e7568476daa0c54c0df4f5bee3cd30b1e068",
    "longdocurl_8k": "ac4c463bc603c391bcb13d3c82f2c4283fd31eeb0747acd241c7be3bdeac6b01",
    "mmlongdoc_8k": "8a656f20a514d7ef11cde2765b288ec2ba28f0df66cb8eb84c47a44812f4d3dd",  # #35: JSON List answers
    "mmlongbench_doc_8k": "97d39a1681f2e407183375f36569aa0750aff6824374c5863c006d8180624d20",
    "readbench_mmlu_pro": "6f50e5601691b5f69c4b518686d3411476974db5da93eeb53b9b97a9b1577776",
    "multi_lexsum_8k": "bd3a4abc3019346001e1ed49b54a02a2071090dac86750987893fecaba21e6a0",
    "gov_report_8k": "7bbdb1a6a3570a74f81d78a6823cd82f89e7b12055735da3da32449910adf378",
    "lvb_val_8k": "3ca5750a49f6cdc71cef2ab8dd59330fa0bbbfb610ad249974d6f01323b72d71",
    "viquae_8k": "dd640ce69b9019f41c5b70cdeebf9c252da7f418f7c59f17ea535069fbb4f0d5",
    "food101_8k": "33ba4ec631c2dc1c10dea48fc8d4961bb66761b01669675296bc8e34896a0825",
    "mmneedle_n2_k2_8k": "f8c53809c71bcfa832b8fc0f21930054de69746782d401ff010ca960f970c58c",
    "mmneedle_m10_n2_k2": "22c4db0e944449cebffc0b36e210cc4b2605a06d80979f7329c0811a4fa68ed2",
    "mm_niah_retrieval_image_8k": "9eb150614ddca9625d6e4263a337389c305979262da0391da9b3fade695185eb",
    "mm_niah_counting_text_8k": "709af8ffe2cd1e8e4bf9e7fd0af79aba8bad2864965fd6731d120a7104b3a7db",
    "memlens_32k": "4d35dcc51583fd2c8d06488b6e035021bd3d7fcc70632e8c749642c4a22abd92",  # #47: num_tokens_at_800px
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


@pytest.fixture(scope="module")
def recipes_folder(tmp_path_factory, real_data, tokenizer_path) -> Path:
    """Every case of ``identity_sources.CASES`` built once (files layout) into one folder."""
    root = tmp_path_factory.mktemp("recipes")
    sources = identity_sources.lay_out_sources(root / "sources", real_data)
    for case in identity_sources.CASES:
        options = identity_sources.case_options(case, root / "sources") or None
        results = build_configs([case.config], {k: sources[k] for k in case.sources}, root / "out",
                                limit=case.limit, options=options, tokenizer=tokenizer_path,
                                store_root=root / "store", progress=False, layout="files")
        assert all(r.ok for r in results), [r.error for r in results]
    return root / "out"


@pytest.fixture(scope="module")
def recipes_built(recipes_folder) -> dict[str, tuple[str, str]]:
    """config -> (rows digest, SHA-256 of its metadata parquet file), of every case."""
    root = recipes_folder.parent
    built = {}
    for case in identity_sources.CASES:  # once all are built: a later config can move an earlier one's images
        metadata = (root / "out" / f"{case.config}.metadata.parquet").read_bytes()
        built[case.config] = rows_digest(root / "out", case.config), hashlib.sha256(metadata).hexdigest()
    if os.environ.get("MMLB_PRINT_PINS"):  # re-recording after a deliberate layout change
        print(json.dumps({config: pins[1] for config, pins in built.items()}, indent=4))
    return built


def test_every_registered_family_has_a_pinned_recipe_build():
    pinned = {case.family for case in identity_sources.CASES if case.config in RECIPES}
    assert set(families()) <= pinned, sorted(set(families()) - pinned)
    assert {case.config for case in identity_sources.CASES} == set(RECIPES)


@pytest.mark.parametrize("config", list(RECIPES))
def test_recipe_rows_are_unchanged(recipes_built, config):
    assert recipes_built[config][0] == RECIPES[config]


@pytest.mark.parametrize("config", list(RECIPE_PARQUET))
def test_recipe_parquet_bytes_are_unchanged(recipes_built, config):
    import pyarrow

    if pyarrow.__version__ != PARQUET_PYARROW:
        pytest.skip(f"bytes pinned under pyarrow {PARQUET_PYARROW}, this is {pyarrow.__version__} (rows still pinned)")
    assert recipes_built[config][1] == RECIPE_PARQUET[config]


def test_every_family_built_into_one_folder_loads_with_plain_datasets(recipes_folder, tmp_path):
    """MMLongBench's families, MMNeedle, MMLongBench-Doc, ReadBench, LongVideoBench and MemLens in
    one folder: every config loads in a fresh process, in memory and streaming, images decoded."""
    from test_folder_mixes import _loaded

    names = [case.config for case in identity_sources.CASES]
    counts = _loaded(str(recipes_folder), names, tmp_path / "cache")
    assert sorted(counts) == sorted(f"{name} {mode}" for name in names for mode in ("in memory", "streaming"))
    for name in names:
        assert counts[f"{name} in memory"] == counts[f"{name} streaming"] and counts[f"{name} in memory"], name
