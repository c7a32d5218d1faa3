"""Paper-vs-built statistics: the papers' numbers as printed, the built ones equal to a recount."""
from __future__ import annotations

import re

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from mmlbdata.dataset import paper_stats
from mmlbdata.dataset.build import build_configs
from mmlbdata.dataset.card import render_card
from mmlbdata.cli import main
from mmlbdata.dataset.stats import Distribution, shard_files


@pytest.mark.parametrize("config, images, std, examples, ref", [
    # MMLongBench Table 3 row "LongDocURL" and Table 2 "LongDocURL ... 1,153"
    ("longdocurl_8k", 3.6, 2.1, 1153, "MMLongBench Table 3"),
    ("longdocurl_128k", 55.3, 18.3, 1153, "MMLongBench Table 3"),
    # Table 3 "VH-Multi 21.7 44.8 91.0 183.4 368.2" (std 0.9 1.3 1.9 2.8 4.3), Table 2 1,000
    ("vh_multi_16k", 44.8, 1.3, 1000, "MMLongBench Table 3"),
    ("vh_multi_64k", 183.4, 2.8, 1000, "MMLongBench Table 3"),
    # Table 3 "MMLongBench-Doc 3.3 6.9 13.8 28.0 56.4", Table 2 961
    ("mmlongdoc_32k", 13.8, 4.8, 961, "MMLongBench Table 3"),
    ("gov_report_128k", 50.7, 0.5, 241, "MMLongBench Table 3"),
    ("cars196_32k", 156.3, 0.9, 458, "MMLongBench Table 3"),
    ("mm_niah_counting_image_8k", 5.7, 1.2, None, "MMLongBench Table 3"),
    # MMNeedle Sec. 3.2 (M images) and 3.3 (5,000 positive + 5,000 negative per setting)
    ("mmneedle_m10_n8_k5", 10, 0.0, 10000, "MMNeedle Sec. 3.2"),
    ("mmneedle_m1_n2_k1", 1, 0.0, 10000, "MMNeedle Sec. 3.2"),
    # MMLongBench-Doc Table 2: 1,082 questions, 47.5 pages per document
    ("mmlongbench_doc", 47.5, None, 1082, "MMLongBench-Doc Table 2"),
])
def test_paper_values_as_printed(config, images, std, examples, ref):
    value = paper_stats.paper_value(config)
    assert (value.images, value.images_std, value.examples) == (images, std, examples)
    assert value.images_ref.startswith(ref)


@pytest.mark.parametrize("config, examples, ref", [
    ("readbench_babilong_qa1_2k", 35, "ReadBench Sec. 2.3"),
    ("lvb_val_64f", 1337, "LongVideoBench Sec. 4.1"),
    ("lvb_test_subs", 5341, "LongVideoBench Sec. 4.1"),
])
def test_papers_without_image_statistics(config, examples, ref):
    value = paper_stats.paper_value(config)
    assert value.images is None and value.examples == examples and value.examples_ref.startswith(ref)


@pytest.mark.parametrize("config", ["mmlongbench_doc_concat", "vh_single", "mmneedle_n4_k2_32k",
                                    "longdocurl_12k"])
def test_configs_no_paper_describes(config):
    assert paper_stats.paper_value(config) is None


def test_comparison_arithmetic_by_hand():
    dist = Distribution("longdocurl_8k", num_tokens=[8000, 8100, 8050], lengths=[8192] * 3,
                        images=[3, 3, 4])
    [c] = paper_stats.compare([dist])
    assert c.built_examples == 3 and c.examples_diff == 3 - 1153
    assert c.built_images == pytest.approx(10 / 3)
    assert c.built_images_std == pytest.approx((1 / 3) ** 0.5)  # ddof=1: (2*(1/3)^2+(2/3)^2)/2
    assert c.images_diff == pytest.approx(10 / 3 - 3.6)
    [row] = paper_stats.table_rows([c])
    assert (row["paper_images"], row["built_images"], row["images_diff"]) == ("3.6 ± 2.1", "3.3 ± 0.6", "-0.3")
    assert (row["paper_examples"], row["built_examples"], row["examples_diff"]) == ("1153", "3", "-1150")


def test_extended_lengths_are_recognised_but_no_paper_gives_a_figure():
    """256K / 512K configs (MMLongBench's extended release) match their dataset's entry, with every
    number None: the comparison prints a dash for the paper and the built figures beside it."""
    value = paper_stats.paper_value("vh_single_512k")
    assert value.dataset == "VH-Single" and value.benchmark == "MMLongBench"
    assert value.images is None and value.images_std is None and value.examples is None
    dist = Distribution("vh_single_512k", num_tokens=[520000, 521000], lengths=[524288] * 2, images=[1300, 1302])
    [row] = paper_stats.table_rows(paper_stats.compare([dist]))
    assert (row["paper_images"], row["images_diff"], row["paper_examples"], row["examples_diff"]) == ("-",) * 4
    assert (row["built_images"], row["built_examples"]) == ("1301.0 ± 1.4", "2")
    assert paper_stats.paper_value("vh_single_128k").images == 368.2  # the five lengths unchanged


@pytest.fixture(scope="module")
def longdocurl_build(tmp_path_factory, real_data, tokenizer_path):
    out = tmp_path_factory.mktemp("paper") / "mmlb"
    build_configs(["longdocurl_8k", "longdocurl_16k"], {"longdocurl": real_data / "longdocurl_sample"},
                  out, store_root=out.parent / "store", tokenizer=tokenizer_path, progress=False)
    return out


def recount(folder, config) -> tuple[int, float]:
    """Rows and mean images per row, straight from the parquet (not through mmlbdata.dataset.stats)."""
    rows = images = 0
    for path in shard_files(folder, config):
        column = "images_file_names" if path.name.endswith(".metadata.parquet") else "images"
        table = pq.read_table(path, columns=[column])
        rows += table.num_rows
        images += pc.sum(pc.list_value_length(table.column(column))).as_py()
    return rows, images / rows


def test_card_renders_the_comparison_and_its_built_numbers_equal_a_recount(longdocurl_build):
    readme = render_card(longdocurl_build, plot=False).read_text()
    section = readme.split("### Compared with the papers")[1].split("###")[0]
    assert "MMLongBench Table 3" in section and "MMLongBench Table 2" in section
    for config, paper_images in (("longdocurl_8k", "3.6 ± 2.1"), ("longdocurl_16k", "7.2 ± 4.5")):
        line = next(l for l in section.splitlines() if f"| `{config}` |" in l)
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[:2] == ["LongDocURL", f"`{config}`"]
        rows, mean_images = recount(longdocurl_build, config)
        assert cells[2] == paper_images
        assert float(cells[3].split(" ± ")[0]) == pytest.approx(mean_images, abs=0.05)
        assert float(cells[4]) == pytest.approx(mean_images - float(paper_images.split()[0]), abs=0.051)
        assert (cells[5], cells[6], cells[7]) == ("1153", str(rows), f"{rows - 1153:+d}")


def test_stats_compare_paper_command(longdocurl_build, capsys):
    assert main(["stats", str(longdocurl_build), "--compare-paper"]) == 0
    out = capsys.readouterr().out
    line = next(l for l in out.splitlines() if l.startswith("longdocurl_8k ") and "±" in l)
    rows, mean_images = recount(longdocurl_build, "longdocurl_8k")
    assert re.search(rf"3\.6 ± 2\.1\s+{mean_images:.1f} ± ", line)
    assert line.split()[-3:] == ["1153", str(rows), f"{rows - 1153:+d}"]
    assert "MMLongBench Table 3 (average images per example" in out
