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
wrote them). ``scripts/build_fingerprint.py`` hashes every built file (images, manifests, README)
for a before/after comparison by hand.
"""
from __future__ import annotations

import hashlib
import json
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
    # memlens: recorded when the family was added (issue 34), the same in both layouts
    "memlens_32k": "822288d3b90fa39c3ab28941555e6e0afdfb697523da366539bf46b3012b3053",  # memlens
}

# The same builds' parquet bytes (``<config>.metadata.parquet``), recorded at bc9d6da, before the
# layer packages (#24), and unchanged by them. Bytes also depend on the parquet library (its
# version is in the footer; its encoders may change), so they are compared only under the pyarrow
# that wrote them; the row digests above hold under any.
PARQUET_PYARROW = "26.0.1"
RECIPE_PARQUET = {
    "vh_single_8k": "c0e0b9d326937fb14911ed24c79efe3642a266a31a74d40f4acf5716f66c6589",
    "vh_multi_8k": "0c812c0cdc8b62cc2506935595a9919b0d9be306f0e68958163b554c5d870b99",
    "longdocurl_8k": "564dd389dd60a72e0990ec61c00d1c12fe791de77f54dd9492022fe909b0b2ff",
    "mmlongdoc_8k": "d3782e7964fd60272c3ce70bcfb603f7aed3bd126987fea00cc126a2144f22db",  # #35: JSON List answers
    "mmlongbench_doc_8k": "5d50347d984dfa5e62fdde91cd26a2235bcd7fd213d4a24d6d2d7b95db8d3610",
    "readbench_mmlu_pro": "2f796493bdc0049a3dbf50eb14d2db24a8a343603578a1a9851eacf0cba254d7",
    "multi_lexsum_8k": "9ddcb937ed3e89b8f12f167a6421f01a6bd333dd87094b09510fdd574f22fb79",
    "gov_report_8k": "b802dd1979d6b192c3d9f98ad3551970714544e5be9d3cd95a87d8302e185dc1",
    "lvb_val_8k": "83519f21738394684b96cc713021a34b85ca984dbb241cee92261eabebdf597d",
    "viquae_8k": "6215accadc31490571ce7be7518aa99aa607495a3b8eac7562b35c6248ea7feb",
    "food101_8k": "52b6fe395e5c59dd616922f3c38f1564bbc4e16a51aea50e79a5c0e827584c18",
    "mmneedle_n2_k2_8k": "0a57889936cf42f80d036849f6d5e63ef48f934642503fd79ebf7e8af756732f",
    "mmneedle_m10_n2_k2": "8515ff071e3180a58e1249cf049db79abfec619a672de09036adc51b9b2c5860",
    "mm_niah_retrieval_image_8k": "5c3f663018cf450da079ca44921b24f0dbc30d8a49f46d01cac98b62392197ad",
    "mm_niah_counting_text_8k": "9f0cb1c3c69d71ecfe866dfde0a058b616aee3785cf00cb162d3849ebf353855",
    "memlens_32k": "1afe0f24e7cf3294906ad156e96ac3d9af326fb6ffd8dac6fa4790de36a167ff",  # recorded with the family
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
def recipes_built(tmp_path_factory, real_data, tokenizer_path) -> dict[str, tuple[str, str]]:
    """Every case of ``identity_sources.CASES`` built once (files layout) into one folder:
    config -> (rows digest, SHA-256 of its metadata parquet file)."""
    root = tmp_path_factory.mktemp("recipes")
    sources = identity_sources.lay_out_sources(root / "sources", real_data)
    built = {}
    for case in identity_sources.CASES:
        options = identity_sources.case_options(case, root / "sources") or None
        results = build_configs([case.config], {k: sources[k] for k in case.sources}, root / "out",
                                limit=case.limit, options=options, tokenizer=tokenizer_path,
                                store_root=root / "store", progress=False, layout="files")
        assert all(r.ok for r in results), [r.error for r in results]
        metadata = (root / "out" / f"{case.config}.metadata.parquet").read_bytes()
        built[case.config] = rows_digest(root / "out", case.config), hashlib.sha256(metadata).hexdigest()
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
