"""ReadBench sources and builder, on local fixtures written in the Hub files' exact schemas.

Fixture texts are real (WikiText-2 Wikipedia prose from MMLB_TEST_DATA); nothing is fetched.
"""
from __future__ import annotations

import csv
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from mmlb_builders import readbench as rb
from mmlbdata.official import readbench_prompts as rbp
from mmlbdata.core.report import BuildReport
from mmlbdata.sources import readbench as src
from mmlbdata.core.store import ImageStore
from mmlbdata.core.tokens import IMAGE_PLACEHOLDER, TokenCounter


# -- fixtures in the Hub schemas ------------------------------------------------------------------

@pytest.fixture(scope="module")
def wiki_words(real_data: Path) -> list[str]:
    raw = (real_data / "text" / "wikitext2_raw_wiki.test.raw").read_text(encoding="utf-8")
    return [w for w in raw.split() if all(ord(c) < 256 for c in w)]


def words(wiki: list[str], start: int, n: int) -> str:
    return " ".join(wiki[start:start + n])


def write_mmlu_pro(root: Path, wiki: list[str]) -> list[dict]:
    rows = []
    for i in range(40):
        rows.append({"question_id": 100 + i, "question": f"Math question {i}: {words(wiki, i * 20, 15)}?",
                     "options": [f"option {j} of {i}" for j in range(10)], "answer": "CDEFGHIJAB"[i % 10],
                     "answer_index": "CDEFGHIJAB".index("CDEFGHIJAB"[i % 10]) + 0, "cot_content": "",
                     "category": "math", "src": f"ori_mmlu-{i}"})
    for i in range(3):
        rows.append({"question_id": 200 + i, "question": None if i == 1 else f"Law question {i}?",
                     "options": ["yes", "no", "maybe"], "answer": "B", "answer_index": 1, "cot_content": "",
                     "category": "law", "src": "stemez"})
    schema = pa.schema([("question_id", pa.int64()), ("question", pa.string()), ("options", pa.list_(pa.string())),
                        ("answer", pa.string()), ("answer_index", pa.int64()), ("cot_content", pa.string()),
                        ("category", pa.string()), ("src", pa.string())])
    (root / "data").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(rows, schema=schema), root / "data" / "test-00000-of-00001.parquet")
    return rows


REDUX_SCHEMA = pa.schema([("question", pa.string()), ("choices", pa.list_(pa.string())), ("answer", pa.int64()),
                          ("error_type", pa.string()), ("source", pa.string()), ("correct_answer", pa.string()),
                          ("potential_reason", pa.string())])


def write_mmlu_redux(root: Path) -> None:
    algebra = [{"question": f"Algebra {i}?", "choices": ["0", "1", "2", "3"], "answer": i % 4, "error_type": "ok",
                "source": None, "correct_answer": None, "potential_reason": None} for i in range(3)]
    anatomy = [{"question": "Which bone?", "choices": ["femur", "ulna", "tibia", "skull"], "answer": 3,
                "error_type": "wrong_groundtruth", "source": "x", "correct_answer": "2", "potential_reason": "r"},
               {"question": "Empty choices?", "choices": [], "answer": 0, "error_type": "ok", "source": None,
                "correct_answer": None, "potential_reason": None}]
    (root / "abstract_algebra").mkdir(parents=True)
    table = pa.Table.from_pylist(algebra, schema=REDUX_SCHEMA)
    with pa.OSFile(str(root / "abstract_algebra" / "data-00000-of-00001.arrow"), "wb") as sink:
        with pa.ipc.new_stream(sink, table.schema) as writer:  # what datasets.save_to_disk writes
            writer.write_table(table)
    (root / "abstract_algebra" / "dataset_info.json").write_text("{}")
    (root / "anatomy" / "test").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(anatomy, schema=REDUX_SCHEMA), root / "anatomy" / "test" / "0000.parquet")


GPQA_COLUMNS = ["Pre-Revision Question", "Pre-Revision Correct Answer", "Pre-Revision Incorrect Answer 1",
                "Pre-Revision Incorrect Answer 2", "Pre-Revision Incorrect Answer 3", "Pre-Revision Explanation",
                "Self-reported question-writing time (minutes)", "Question", "Correct Answer", "Incorrect Answer 1",
                "Incorrect Answer 2", "Incorrect Answer 3", "Explanation", "Revision Comments (from Question Writer)",
                "Subdomain", "Writer's Difficulty Estimate", "Extra Revised Question", "Record ID",
                "High-level domain"]


def write_gpqa(root: Path) -> None:
    root.mkdir(parents=True)
    with open(root / "gpqa_diamond.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=GPQA_COLUMNS)
        writer.writeheader()
        for i in range(4):
            row = dict.fromkeys(GPQA_COLUMNS, "")
            row.update({"Question": f"GPQA question {i}, with a comma?", "Correct Answer": f"right {i}",
                        "Incorrect Answer 1": f"wrong a{i}", "Incorrect Answer 2": f"wrong b{i}",
                        "Incorrect Answer 3": f"wrong c{i}", "Record ID": f"rec{i:03d}", "Subdomain": "Genetics",
                        "High-level domain": "Biology"})
            if i == 2:
                row["Correct Answer"] = ""
            writer.writerow(row)


FACTS = ["Mary moved to the bathroom.", "John went to the hallway.", "Mary travelled to the office."]


def babilong_context(wiki: list[str], n_words: int, fact_at: list[int]) -> str:
    """Noise text (real prose) with the bAbI facts inserted at the given word positions."""
    out, position = [], 0
    for fact, at in zip(FACTS, fact_at):
        out.append(words(wiki, 5000 + position, at - position))
        out.append(fact)
        position = at
    out.append(words(wiki, 5000 + position, n_words - position))
    return " ".join(out)


def write_babilong(root: Path, wiki: list[str]) -> None:
    task = root / "data" / "qa1"
    task.mkdir(parents=True)
    zero = [{"input": " ".join(FACTS), "question": "Where is Mary?", "target": "office"},
            {"input": "Sandra went to the garden.", "question": "Where is Sandra?", "target": "garden"}]
    with open(task / "0k.json", "w") as handle:  # JSON lines
        handle.write("\n".join(json.dumps(r) for r in zero) + "\n")
    four = [{"input": babilong_context(wiki, 2500, [300, 1200, 2000]), "question": "Where is Mary?",
             "target": "office"},
            {"input": babilong_context(wiki, 2000, [100, 500, 900]), "question": "Where is Sandra?"}]  # no target
    (task / "4k.json").write_text(json.dumps(four))  # a JSON array
    # ~6,000 words like the real 8k files: rendered, that is under 8192 tokens, so the builder
    # moves on to the same sample at 16k
    eight = [{"input": babilong_context(wiki, 6000, [1500, 2500, 3600]), "question": "Where is Mary?",
              "target": "office"},
             {"input": babilong_context(wiki, 6000, [100, 200, 300]), "question": "Where is Sandra?",
              "target": "kitchen"}]  # its 0k twin says garden: facts cannot be trusted
    (task / "8k.json").write_text(json.dumps(eight))
    sixteen = [{"input": babilong_context(wiki, 12000, [3000, 5000, 7000]), "question": "Where is Mary?",
                "target": "office"}]
    (task / "16k.json").write_text(json.dumps(sixteen))


def write_longbench(root: Path, wiki: list[str]) -> None:
    (root / "data").mkdir(parents=True)
    rows = []
    for i, n in enumerate([300, 600, 1500, 9000, 11000]):
        context = words(wiki, 20000 + i * 12000, n)
        rows.append({"input": f"Question {i}?", "context": context, "answers": [f"answer {i}"], "length": n,
                     "dataset": "hotpotqa_e", "language": "en", "all_classes": None, "_id": f"id{i}"})
    rows.append({"input": "No context?", "answers": ["x"], "length": 10, "dataset": "hotpotqa_e",
                 "language": "en", "all_classes": None, "_id": "broken"})
    with open(root / "data" / "hotpotqa_e.jsonl", "w") as handle:
        handle.write("\n".join(json.dumps(r) for r in rows) + "\n{not json\n")


@pytest.fixture(scope="module")
def sources(tmp_path_factory, wiki_words) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("readbench_sources")
    write_mmlu_pro(root / "mmlu_pro", wiki_words)
    write_mmlu_redux(root / "mmlu_redux")
    write_gpqa(root / "gpqa")
    write_babilong(root / "babilong", wiki_words)
    write_longbench(root / "longbench", wiki_words)
    return {key: root / key for key in ("mmlu_pro", "mmlu_redux", "gpqa", "babilong", "longbench")}


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> ImageStore:
    return ImageStore(tmp_path_factory.mktemp("store"))


def build(name: str, sources, store, counter, **kwargs) -> tuple[list[dict], BuildReport]:
    report = BuildReport()
    builder = rb.ReadBench(name, sources=sources, store=store, counter=counter, report=report,
                           cache_dir=str(store.root.parent / "hf"), **kwargs)
    return list(builder.generate()), report


def check_common(rows: list[dict], counter: TokenCounter, metric: str) -> None:
    for row in rows:
        assert row["prompt"].count(IMAGE_PLACEHOLDER) == len(row["images"]) >= 1
        assert row["metric"] == metric
        assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
        for ref in row["images"][:-1]:  # full pages keep A4 at 92.9 PPI
            assert (ref.width, ref.height) == (768, 1086)
        last = row["images"][-1]  # the partial page: cropped to its text plus margins
        assert last.width <= 768 and last.height <= 1086
        for ref in row["images"]:
            assert Image.open(ref.path).size == (ref.width, ref.height)


# -- sources --------------------------------------------------------------------------------------

def test_readers_skip_and_report_missing_fields(sources) -> None:
    report = BuildReport()
    pro = list(src.read_mmlu_pro(sources["mmlu_pro"], report))
    redux = list(src.read_mmlu_redux(sources["mmlu_redux"], report))
    gpqa = list(src.read_gpqa(sources["gpqa"], report))
    babi = list(src.read_babilong(sources["babilong"], report, "qa1", "4k"))
    lb = list(src.read_longbench(sources["longbench"], report, "hotpotqa_e"))
    assert (len(pro), len(redux), len(gpqa), len(babi), len(lb)) == (42, 4, 3, 1, 5)
    reasons = sorted(f"{Path(s.file).name}:{s.record}:{s.reason}" for s in report.skipped)
    assert reasons == sorted([
        "test-00000-of-00001.parquet:41:missing field(s): question",
        "0000.parquet:1:missing field(s): choices",
        "gpqa_diamond.csv:2:missing field(s): Correct Answer",
        "4k.json:1:missing field(s): target",
        "hotpotqa_e.jsonl:5:missing field(s): context",
        "hotpotqa_e.jsonl:line 7:invalid JSON: Expecting property name enclosed in double quotes: "
        "line 1 column 2 (char 1)",
    ])
    assert redux[0].category == "abstract_algebra" and redux[0].answer == "A" and redux[1].answer == "B"
    assert redux[3].answer == "D" and redux[3].extra["error_type"] == "wrong_groundtruth"
    assert gpqa[0].options == ("right 0", "wrong a0", "wrong b0", "wrong c0") and gpqa[0].category == "Biology"
    assert lb[0].length == 300 and lb[0].answers == ("answer 0",)


def test_missing_local_files_name_the_layout(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="gpqa_diamond"):
        list(src.read_gpqa(tmp_path, BuildReport()))
    with pytest.raises(FileNotFoundError, match="qa3/2k"):
        list(src.read_babilong(tmp_path, BuildReport(), "qa3", "2k"))


# -- multiple choice ------------------------------------------------------------------------------

def test_mmlu_pro_samples_35_per_category_with_random_42(sources, store, counter) -> None:
    rows, report = build("readbench_mmlu_pro", sources, store, counter)
    math = [r for r in rows if json.loads(r["meta"])["category"] == "math"]
    law = [r for r in rows if json.loads(r["meta"])["category"] == "law"]
    all_math = [f"mmlu_pro_{100 + i}" for i in range(40)]
    assert [r["id"] for r in math] == random.Random(42).sample(all_math, 35)
    assert [r["id"] for r in law] == ["mmlu_pro_200", "mmlu_pro_202"]
    assert report.num_skipped == 1
    check_common(rows, counter, "readbench_mc")
    row = math[0]
    i = int(row["id"].rsplit("_", 1)[1]) - 100
    assert row["answers"] == ["CDEFGHIJAB"[i % 10]]
    assert len(row["images"]) == 1 and row["images"][0].height < 400  # one cropped options page
    assert row["prompt"] == (
        "The following are multiple-choice questions about math. The possible answers are listed in the attached "
        f"image.\n\nQuestion: {row['question']}\nOptions:\n<image>Think step by step and then output the answer "
        'in the format "The answer is (X)" at the end, where X is the letter associated with the correct answer.')
    meta = json.loads(row["meta"])
    assert meta["options"][0] == f"option 0 of {i}"
    assert meta["context"] == "\n".join(f"{'ABCDEFGHIJ'[j]}. option {j} of {i}" for j in range(10))


@pytest.mark.parametrize("source, category, head, tail", [
    # ReadBench run_eval.py mmlu_mm (cot=True): head with rec['category'] as given, images, tail
    ("mmlu_redux", "college_mathematics",
     "The following are multiple-choice questions about college_mathematics. The possible answers are listed "
     "in the attached image.\n\nQuestion: Q?\nOptions:\n",
     'Think step by step and then output the answer in the format "The answer is (X)" at the end, where X is '
     "the letter associated with the correct answer."),
    # ReadBench run_eval.py gpqa_mm (cot=True)
    ("gpqa", "Physics", "What is the correct answer to this question: Q?\n\nOptions:",
     "Your answer must end with Answer: (LETTER). Let's think step by step: "),
])
def test_mc_prompt_parts_are_run_eval_multimodal_builders(source, category, head, tail) -> None:
    record = src.MCRecord(source, "x", "Q?", ("a", "b", "c", "d"), "A", category, {})
    assert rbp.mc_prompt_parts(record) == (head, tail)


def test_options_images_are_cropped_in_width_unless_asked(sources, store, counter) -> None:
    rows, _ = build("readbench_mmlu_redux", sources, store, counter)
    # "A. 0" .. "D. 3": the widest line plus both margins, far narrower than the page
    assert all(r["images"][0].width < 150 for r in rows[:3])
    full, _ = build("readbench_mmlu_redux", sources, store, counter, options={"crop_width": False})
    assert all(r["images"][0].width == 768 for r in full)
    assert [r["images"][0].height for r in full] == [r["images"][0].height for r in rows]
    assert all(f["num_tokens"] > r["num_tokens"] for f, r in zip(full, rows))


def test_options_image_text_is_one_option_per_line() -> None:
    assert rbp.options_text(["x", "y", "z"]) == "A. x\nB. y\nC. z"


def test_mmlu_redux_reads_arrow_and_parquet(sources, store, counter) -> None:
    rows, report = build("readbench_mmlu_redux", sources, store, counter)
    assert [r["id"] for r in rows] == ["mmlu_redux_abstract_algebra_0", "mmlu_redux_abstract_algebra_1",
                                       "mmlu_redux_abstract_algebra_2", "mmlu_redux_anatomy_0"]
    assert rows[3]["answers"] == ["D"] and "about anatomy." in rows[3]["prompt"]
    assert "about abstract_algebra." in rows[0]["prompt"]  # the subject as ReadBench names it
    assert report.num_skipped == 1


def test_gpqa_options_shuffled_with_stable_seed(sources, store, counter) -> None:
    rows, report = build("readbench_gpqa", sources, store, counter)
    again, _ = build("readbench_gpqa", sources, store, counter)
    assert [r["images"] for r in rows] == [r["images"] for r in again]
    assert len(rows) == 3 and report.num_skipped == 1
    letters = set()
    for row in rows:
        meta = json.loads(row["meta"])
        index = src.LETTERS.index(row["answers"][0])
        assert meta["options"][index].startswith("right ")
        letters.add(row["answers"][0])
        assert row["prompt"].startswith(f"What is the correct answer to this question: {row['question']}\n\nOptions:<image>")
        assert row["prompt"].endswith("Your answer must end with Answer: (LETTER). Let's think step by step: ")
    order = rb.shuffle_gpqa(src.MCRecord("gpqa", "gpqa_rec000", "q", ("r", "a", "b", "c"), "A", "Bio",
                                         {"record_id": "rec000"}))
    expected = list(range(4))
    random.Random(rb.stable_seed("gpqa", "rec000")).shuffle(expected)
    assert order[2] == expected
    assert len(letters) > 1 or len(rows) < 3


# -- BABILong -------------------------------------------------------------------------------------

def test_babilong_original_renders_the_input(sources, store, counter) -> None:
    rows, report = build("readbench_babilong_qa1_4k", sources, store, counter)
    assert len(rows) == 1 and report.num_skipped == 1
    row = rows[0]
    check_common(rows, counter, "babilong")
    assert row["answers"] == ["office"] and row["question"] == "Where is Mary?"
    assert row["prompt"].startswith("I will give you images with text with the facts about positions of different")
    assert ("answer the question." + "<image>" * len(row["images"]) +
            "<question>\nWhere is Mary?\n</question>\nAlways return your answer") in row["prompt"]
    assert len(row["images"]) == 3  # 2,500 words of unbroken prose: ~1,000 words a page
    meta = json.loads(row["meta"])
    assert meta["task"] == "qa1" and meta["length_bin"] == "4k" and meta["ppi"] == 92.9
    source = json.loads((sources["babilong"] / "data/qa1/4k.json").read_text())[0]["input"]
    assert meta["context"] == source


# ReadBench's BABILong message, by hand from AnswerDotAI/readbench @b6546cb babilong_prompts.py:
# DEFAULT_PROMPTS (lines 98-193) rewritten by _mmify_instruction (lines 208-210), then the parts
# [instruction | pages | "<question>\n{q}\n</question>\n{post}"] (build_prompt, lines 233-239).
READBENCH_BABILONG = {
    "qa1": ("I will give you images with text with the facts about positions of different persons hidden in some "
            "random text and a question. You need to answer the question based only on the information from the "
            "facts. If a person was in different locations, use the latest location to answer the question.",
            "Always return your answer in the following format: The most recent location of \u2019person\u2019 is "
            "\u2019location\u2019. Do not write anything else after that."),  # lines 100-106
    # lines 110-119: opens "I give you context"; line 208's regex makes it "I will give you images with text";
    # "question.You" (no space) as in line 111
    "qa2": ("I will give you images with text with the facts about locations and actions of different persons "
            "hidden in some random text and a question.You need to answer the question based only on the "
            "information from the facts.\nIf a person got an item in the first location and travelled to the second "
            "location the item is also in the second location. If a person dropped an item in the first location "
            "and moved to the second location the item remains in the first location.",
            "Always return your answer in the following format: The \u2019item\u2019 is in \u2019location\u2019. "
            "Do not write anything else after that."),
    # lines 123-132: also opens "I give you context"
    "qa3": ("I will give you images with text with the facts about locations and actions of different persons "
            "hidden in some random text and a question. You need to answer the question based only on the "
            "information from the facts.\nIf a person got an item in the first location and travelled to the second "
            "location the item is also in the second location. If a person dropped an item in the first location "
            "and moved to the second location the item remains in the first location.",
            "Always return your answer in the following format: Before the $location_1$ the $item$ was in the "
            "$location_2$. Do not write anything else after that."),
    "qa7": ("I will give you images with text with the facts about people and objects they carry, hidden in some "
            "random text and a question. You need to answer the question based only on the information from the "
            "facts.",
            "Your answer should contain only one word - none or $number_of_objects$. Do not write anything else "
            "after that. Do not explain your answer."),  # lines 161-165
}
# The rest of each task's rewritten instruction, up to the first " hidden" (lines 134-192), by hand.
READBENCH_BABILONG_OPENINGS = {
    "qa4": "I will give you images with text with the facts about different people, their location and actions,",
    "qa5": "I will give you images with text with the facts about locations and their relations",
    "qa6": "I will give you images with text with the facts about people and their locations",
    "qa8": "I will give you images with text with the facts about people and objects they carry,",
    "qa9": "I will give you images with text with the facts about people and their locations",
    "qa10": "I will give you images with text with the facts about people and their locations",
}


@pytest.mark.parametrize("task", sorted(READBENCH_BABILONG))
def test_babilong_prompt_is_readbench_message(task: str) -> None:
    instruction, post = READBENCH_BABILONG[task]
    before, after = rbp.babilong_prompt_parts(task, "Where is Mary?")
    assert before == instruction
    assert after == f"<question>\nWhere is Mary?\n</question>\n{post}"
    prompt = rbp.with_pages(before, 2, after)
    # split at the images, the three message parts come back unchanged (no examples, no separators)
    assert prompt.split(IMAGE_PLACEHOLDER) == [instruction, "", f"<question>\nWhere is Mary?\n</question>\n{post}"]


@pytest.mark.parametrize("task", sorted(READBENCH_BABILONG_OPENINGS))
def test_babilong_other_tasks_open_as_readbench_rewrites_them(task: str) -> None:
    before, _ = rbp.babilong_prompt_parts(task, "Q?")
    assert before.split(" hidden")[0] == READBENCH_BABILONG_OPENINGS[task]


def test_babilong_mm_instruction_follows_mmify_rules() -> None:
    # babilong_prompts.py @b6546cb line 208: "[Ii] (give|will give) you context" at a word start -> "I will
    # give you images with text"; line 210: only " context " and " context." elsewhere.
    assert rbp.babilong_mm_instruction("i give you context now") == "I will give you images with text now"
    assert rbp.babilong_mm_instruction("Then I will give you context.") == "Then I will give you images with text."
    assert rbp.babilong_mm_instruction("Read the context. A context here.") == \
        "Read the images with text. A images with text here."
    assert rbp.babilong_mm_instruction("contexts, context\nand context,") == "contexts, context\nand context,"
    assert rbp.babilong_mm_instruction("Hi give you context") == "Hi give you context"  # no word start at "i"


def test_every_babilong_task_drops_examples_and_renames_context() -> None:
    for task in src.BABILONG_TASKS:
        before, after = rbp.babilong_prompt_parts(task, "Q?")
        assert before.startswith("I will give you images with text with the facts about ")
        assert "context" not in before
        assert "<example>" not in before + after and after.startswith("<question>\nQ?\n</question>\n")


def test_longbench_templates_are_readbench_dataset2prompt() -> None:
    # AnswerDotAI/readbench eval_config/dataset2prompt.json, "hotpotqa" and "triviaqa" keys, verbatim
    assert rbp.longbench_prompt_parts("hotpotqa_e", "Who?") == (
        "Answer the question based on the given passages. Only give me the answer and do not output any other "
        "words.\n\nThe following are given passages.\n",
        "\n\nAnswer the question based on the given passages. Only give me the answer and do not output any other "
        "words.\n\nQuestion: Who?\nAnswer:")
    assert rbp.longbench_prompt_parts("triviaqa_e", "Q: x") == (
        "Answer the question based on the given passage. Only give me the answer and do not output any other "
        "words. The following are some examples.\n\n", "\n\nQ: x")


def test_ppi_variant_config(sources, store, counter) -> None:
    rows, _ = build("readbench_babilong_qa1_4k_150ppi", sources, store, counter)
    assert rows[0]["images"][0].width == 1240 and rows[0]["images"][0].height == 1754
    assert json.loads(rows[0]["meta"])["ppi"] == 150


def test_std_babilong_keeps_fact_pages_within_budget(sources, store, counter) -> None:
    rows, report = build("readbench_std_babilong_qa1_8k", sources, store, counter)
    assert [s.reason for s in report.skipped] == [
        "no 0k twin with the same question and target: its facts cannot be located"]
    assert len(rows) == 1
    row, meta = rows[0], json.loads(rows[0]["meta"])
    assert row["length"] == 8192 and row["id"] == "babilong_qa1_8k_0_8k"
    assert meta["source_length"] == "16k" and meta["length_bin"] == "8k" and meta["task"] == "qa1"
    assert row["num_tokens"] <= 8192 < meta["next_num_tokens"]
    assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
    assert meta["source_pages"] > len(meta["kept_pages"]) == len(row["images"])
    assert set(meta["fact_pages"]) <= set(meta["kept_pages"])
    kept = meta["kept_pages"]
    assert kept == list(range(kept[0], kept[-1] + 1))  # a contiguous window
    # the facts really are on the kept pages: read them back from the rendered PDF text
    from mmlbdata.media.pages import layout_text
    layout = layout_text(json.loads((sources["babilong"] / "data/qa1/16k.json").read_text())[0]["input"])
    kept_text = " ".join(" ".join(layout.pages[i]) for i in kept)
    assert all(fact in kept_text for fact in FACTS)
    assert meta["context"].split() == kept_text.split()


def test_fact_location_helpers() -> None:
    assert rb.fact_sentences("A went. B ran!  C sat?") == ["A went.", "B ran!", "C sat?"]
    assert rb.fact_word_indices("x y A went. z B ran! w", ["A went.", "B ran!"]) == [2, 5]
    assert rb.fact_word_indices("B ran! A went.", ["A went.", "B ran!"]) is None
    assert rb.middle_out_order(5) == [0, 4, 1, 3, 2]


# -- LongBench ------------------------------------------------------------------------------------

def test_longbench_bins_and_template(sources, store, counter) -> None:
    rows, report = build("readbench_longbench_hotpotqa_e", sources, store, counter)
    assert report.num_skipped == 2  # missing context, bad JSON line
    bins = {r["id"]: json.loads(r["meta"])["length_bin"] for r in rows}
    assert bins == {"longbench_hotpotqa_e_id1": "512-1024", "longbench_hotpotqa_e_id2": "1024-2048"}
    check_common(rows, counter, "longbench_f1")
    row = rows[0]
    assert row["answers"] == ["answer 1"]
    assert row["prompt"] == (
        "Answer the question based on the given passages. Only give me the answer and do not output any other "
        "words.\n\nThe following are given passages.\n" + "<image>" * len(row["images"]) + "\n\nAnswer the "
        "question based on the given passages. Only give me the answer and do not output any other words.\n\n"
        "Question: Question 1?\nAnswer:")
    assert [src.longbench_bin(n) for n in (511, 512, 1023, 1024, 8191, 8192)] == [
        None, "512-1024", "512-1024", "1024-2048", "4096-8192", None]


def test_std_longbench_truncates_the_middle(sources, store, counter) -> None:
    rows, report = build("readbench_std_longbench_hotpotqa_e_8k", sources, store, counter)
    assert {r["id"] for r in rows} == {"longbench_hotpotqa_e_id3_8k", "longbench_hotpotqa_e_id4_8k"}
    assert any("too short to reach 8192 tokens" in n for n in report.notes)
    for row in rows:
        meta = json.loads(row["meta"])
        assert row["num_tokens"] <= 8192 < meta["next_num_tokens"]
        assert row["num_tokens"] == counter.example(row["prompt"], row["images"])
        assert meta["subset"] == "hotpotqa_e" and meta["length_bin"] == "8k"
        kept, n = meta["kept_pages"], meta["source_pages"]
        assert kept[0] == 0 and kept[-1] == n - 1 and len(kept) < n  # head and tail kept


def test_split_template_keeps_braces_in_values() -> None:
    before, after = rbp.split_template("a {input} {context} b {input}", input="{x}")
    assert (before, after) == ("a {x} ", " b {x}")


def test_limit_caps_rows(sources, store, counter) -> None:
    rows, _ = build("readbench_mmlu_pro", sources, store, counter, limit=3)
    assert len(rows) == 3


def test_config_names_registered() -> None:
    from mmlbdata.dataset.registry import all_configs

    names = set(all_configs())
    for name in ("readbench_mmlu_pro", "readbench_mmlu_redux", "readbench_gpqa", "readbench_babilong_qa1_4k",
                 "readbench_babilong_qa10_0k", "readbench_longbench_hotpotqa_e", "readbench_longbench_narrativeqa",
                 "readbench_mmlu_pro_150ppi", "readbench_std_babilong_qa1_128k", "readbench_std_longbench_2wikimqa_e_8k"):
        assert name in names, name


def test_hub_mode_asks_datasets_for_the_right_configs(monkeypatch) -> None:
    """Without a local folder the readers go through datasets.load_dataset (faked here: no network)."""
    calls = []

    def fake_hub_rows(repo, name, split, **kwargs):
        calls.append((repo, name, split, kwargs))
        row = {"input": "ctx", "question": "q?", "target": "t", "context": "c " * 600, "answers": ["a"],
               "length": 600, "_id": "x", "Question": "Q", "Correct Answer": "r", "Incorrect Answer 1": "w1",
               "Incorrect Answer 2": "w2", "Incorrect Answer 3": "w3", "Record ID": "recX",
               "question_id": 1, "options": ["o1", "o2"], "answer": "B", "category": "math", "choices": ["c1", "c2"]}
        if "redux" in repo:
            row["answer"] = 1  # MMLU-Redux answers are indices
        yield from enumerate([row])

    monkeypatch.setattr(src, "hub_rows", fake_hub_rows)
    report = BuildReport()
    assert len(list(src.read_mmlu_pro(None, report))) == 1
    assert len(list(src.read_gpqa(None, report))) == 1
    assert len(list(src.read_babilong(None, report, "qa2", "1k"))) == 1
    assert len(list(src.read_longbench(None, report, "triviaqa_e"))) == 1
    redux = list(src.read_mmlu_redux(None, report))
    assert len(redux) == 57 and redux[0].category == "abstract_algebra"
    assert calls[:4] == [
        ("TIGER-Lab/MMLU-Pro", None, "test", {}),
        ("Idavidrein/gpqa", "gpqa_diamond", "train", {}),
        ("RMT-team/babilong", "1k", "qa2", {}),
        ("THUDM/LongBench", None, "test", {"revision": "refs/convert/parquet",
                                           "data_files": {"test": "triviaqa_e/test/*.parquet"}}),
    ]
    assert calls[4] == ("edinburgh-dawg/mmlu-redux-2.0", "abstract_algebra", "test", {})
    assert report.num_skipped == 0


def test_characters_no_font_draws_are_reported_once(tmp_path: Path, store, counter) -> None:
    task = tmp_path / "data" / "qa1"
    task.mkdir(parents=True)
    rows = [{"input": f"Mary went to the kitchen \U0001F600 {i}. \u4e2d\u6587", "question": "Where is Mary?",
             "target": "kitchen"} for i in range(3)]
    (task / "1k.json").write_text(json.dumps(rows))
    built, report = build("readbench_babilong_qa1_1k", {"babilong": tmp_path}, store, counter)
    assert len(built) == 3 and report.num_skipped == 0
    assert len(report.notes) == 1
    assert "3 record(s) have 3 character(s) no font draws" in report.notes[0] and "U+1F600 x3" in report.notes[0]
    assert json.loads(built[0]["meta"])["context"] == rows[0]["input"]  # the text keeps the original


def test_layout_official_draws_readbench_pages(sources, store, counter) -> None:
    """``--option layout=official``: data_prep.py's 49 lines of 21 px a page instead of 55."""
    official, _ = build("readbench_babilong_qa1_4k", sources, store, counter, options={"layout": "official"})
    library, _ = build("readbench_babilong_qa1_4k", sources, store, counter)
    # the same 2,500 words take 3 pages either way, the last one holding more lines in 49-line pages
    assert official[0]["images"][-1].height != library[0]["images"][-1].height
    assert (official[0]["images"][0].width, official[0]["images"][0].height) == (768, 1086)
    assert official[0]["images"][-1].height % 21 == (2 * 23) % 21  # 2 margins + 21 px per line
    with pytest.raises(ValueError, match="layout='typeset'"):
        build("readbench_babilong_qa1_4k", sources, store, counter, options={"layout": "typeset"})


# -- selection=official: ReadBench's downsampler.py ------------------------------------------------

def write_babilong_group(root: Path, task: str, length: str, rows: int) -> None:
    """``rows`` samples of one BABILong split, in the Hub's data/<task>/<length>.json layout."""
    folder = root / "data" / task
    folder.mkdir(parents=True, exist_ok=True)
    samples = [{"input": f"Mary went to room {i}.", "question": "Where is Mary?", "target": f"room {i}"}
               for i in range(rows)]
    (folder / f"{length}.json").write_text(json.dumps(samples))


def test_selection_official_replays_downsampler_shared_generator(tmp_path: Path, store, counter) -> None:
    """Hand-run of downsampler.py (``_set_seed``: ``RNG = random.Random(42)``; ``_downsample``: groups
    keyed ``(dataset, length_bin, subset)`` for BABILong, visited in ``sorted(buckets.keys())``, each
    larger than the cap of 35 drawn with ``RNG.sample(records, 35)``): at 0k the groups come as qa1,
    qa10, qa2 (text order), so qa2's questions are the THIRD draw of the one generator."""
    root = tmp_path / "babilong"
    for task, rows in (("qa1", 40), ("qa10", 38), ("qa2", 37)):
        write_babilong_group(root, task, "0k", rows)
    rng = random.Random(42)
    rng.sample(range(40), 35)  # ("babilong", "0k", "qa1")
    rng.sample(range(38), 35)  # ("babilong", "0k", "qa10")
    expected = rng.sample(range(37), 35)  # ("babilong", "0k", "qa2")
    rows, _ = build("readbench_babilong_qa2_0k", {"babilong": root}, store, counter,
                    options={"selection": "official"})
    assert [json.loads(row["meta"])["index"] for row in rows] == expected
    own, _ = build("readbench_babilong_qa2_0k", {"babilong": root}, store, counter)  # default: per group
    assert [json.loads(row["meta"])["index"] for row in own] == random.Random(42).sample(range(37), 35) != expected
    first, _ = build("readbench_babilong_qa1_0k", {"babilong": root}, store, counter, options={"selection": "official"})
    assert [json.loads(row["meta"])["index"] for row in first] == random.Random(42).sample(range(40), 35)


def test_selection_official_reports_only_its_own_bad_lines_once(tmp_path: Path, store, counter) -> None:
    """Counting the earlier groups (and its own) must not report their bad lines into this
    config's report: qa1's are qa1's config's to report, and qa2's own are reported once."""
    root = tmp_path / "babilong"
    for task, rows in (("qa1", 40), ("qa10", 38), ("qa2", 37)):
        write_babilong_group(root, task, "0k", rows)
        path = root / "data" / task / "0k.json"
        samples = json.loads(path.read_text())
        del samples[3]["target"]
        path.write_text(json.dumps(samples))
    rows, report = build("readbench_babilong_qa2_0k", {"babilong": root}, store, counter,
                         options={"selection": "official"})
    assert len(rows) == 35
    assert report.num_skipped == 1 and "qa2" in report.skipped[0].file


def test_selection_official_names_a_missing_earlier_group(tmp_path: Path, store, counter) -> None:
    root = tmp_path / "babilong"
    write_babilong_group(root, "qa1", "0k", 40)
    write_babilong_group(root, "qa2", "0k", 37)  # qa10 (drawn between them) is missing
    with pytest.raises(FileNotFoundError, match="selection=official needs .* babilong qa10/0k"):
        build("readbench_babilong_qa2_0k", {"babilong": root}, store, counter, options={"selection": "official"})
    with pytest.raises(ValueError, match="selection='shared'"):
        build("readbench_babilong_qa2_0k", {"babilong": root}, store, counter, options={"selection": "shared"})


def test_official_draw_skips_gpqa_and_small_groups() -> None:
    # downsampler.py: GPQA taken whole (MIN_OVERALL_MINI >= 448), a group of <= 35 returned as is,
    # neither consuming the generator; keys in sorted order (LongBench bins sort as text)
    sizes = {("gpqa", "Physics"): 86, ("babilong", "0k", "qa1"): 20, ("longbench", "hotpotqa_e", "512-1024"): 50,
             ("longbench", "hotpotqa_e", "1024-2048"): 36}
    picks = src.official_draw(sizes)
    rng = random.Random(42)
    assert picks[("longbench", "hotpotqa_e", "1024-2048")] == rng.sample(range(36), 35)
    assert picks[("longbench", "hotpotqa_e", "512-1024")] == rng.sample(range(50), 35)
    assert picks[("gpqa", "Physics")] == list(range(86)) and picks[("babilong", "0k", "qa1")] == list(range(20))


def write_longbench_subset(root: Path, subset: str, lengths: list[int]) -> None:
    """One LongBench subset (data/<subset>.jsonl), a row per word count in ``lengths``."""
    (root / "data").mkdir(parents=True, exist_ok=True)
    rows = [{"input": f"Q{i}?", "context": f"context {i} " * 3, "answers": [f"a{i}"], "length": n,
             "dataset": subset, "language": "en", "all_classes": None, "_id": f"{subset}{i}"}
            for i, n in enumerate(lengths)]
    (root / "data" / f"{subset}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def write_groups_before_mmlu(tmp_path: Path) -> tuple[Path, Path]:
    """Every BABILong (length, task) and LongBench subset downsampler.py reads; two BABILong groups
    (0k/qa1: 36, 8k/qa9: 37) and three LongBench bins (hotpotqa_e 36, multifieldqa_en_e 38 at
    512-1024; passage_count_e 40 at 2048-4096) are over the cap of 35, the rest one row each."""
    babilong, longbench = tmp_path / "babilong", tmp_path / "longbench"
    big = {("0k", "qa1"): 36, ("8k", "qa9"): 37}
    for length in src.ORIGINAL_BABILONG_LENGTHS:
        for task in rb.src.BABILONG_TASKS:
            write_babilong_group(babilong, task, length, big.get((length, task), 1))
    big_bins = {"hotpotqa_e": [600] * 36, "multifieldqa_en_e": [700] * 38, "passage_count_e": [3000] * 40}
    for subset in src.OFFICIAL_LONGBENCH_SUBSETS:
        write_longbench_subset(longbench, subset, big_bins.get(subset, [600]))
    return babilong, longbench


def test_selection_official_mmlu_pro_comes_after_every_babilong_and_longbench_draw(
        tmp_path: Path, sources, store, counter) -> None:
    """downsampler.py sorts ALL keys of all datasets together: "babilong" < "gpqa" < "longbench" <
    "mmlu_pro", so MMLU-Pro's math questions come from the generator after the draws of every
    BABILong group and every LongBench (subset, bin) larger than 35, multifieldqa_en_e's included
    (its ``postfilter_lb_data`` drops it only after ``_downsample``). Hand-run of that order below."""
    babilong, longbench = write_groups_before_mmlu(tmp_path)
    rng = random.Random(42)
    for size in (36, 37, 36, 38, 40):  # babilong 0k/qa1, 8k/qa9; hotpotqa_e, multifieldqa_en_e, passage_count_e
        rng.sample(range(size), 35)
    # ("mmlu_pro", "law"): 2 readable questions, taken whole; ("mmlu_pro", "math"): 40, drawn
    math = rng.sample(range(40), 35)
    rows, _ = build("readbench_mmlu_pro", {**sources, "babilong": babilong, "longbench": longbench}, store, counter,
                    options={"selection": "official"})
    assert [row["id"] for row in rows] == ["mmlu_pro_200", "mmlu_pro_202"] + [f"mmlu_pro_{100 + i}" for i in math]


def test_selection_official_orders_gpqa_by_subdomain(tmp_path: Path, store, counter) -> None:
    """GPQA is taken whole, but in downsampler.py's bucket order: data_prep.py's category is the
    ``Subdomain`` (else the ``High-level domain``), buckets sorted, rows in order within one."""
    root = tmp_path / "gpqa"
    root.mkdir()
    with open(root / "gpqa_diamond.csv", "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=GPQA_COLUMNS)
        writer.writeheader()
        for i, subdomain in enumerate(["Genetics", "Astrophysics", "", "Astrophysics"]):
            row = dict.fromkeys(GPQA_COLUMNS, "")
            row.update({"Question": f"Q{i}?", "Correct Answer": "r", "Incorrect Answer 1": "a",
                        "Incorrect Answer 2": "b", "Incorrect Answer 3": "c", "Record ID": f"rec{i}",
                        "Subdomain": subdomain, "High-level domain": "Chemistry"})
            writer.writerow(row)
    official, _ = build("readbench_gpqa", {"gpqa": root}, store, counter, options={"selection": "official"})
    assert [row["id"] for row in official] == ["gpqa_rec1", "gpqa_rec3", "gpqa_rec2", "gpqa_rec0"]
    own, _ = build("readbench_gpqa", {"gpqa": root}, store, counter)
    assert [row["id"] for row in own] == ["gpqa_rec0", "gpqa_rec1", "gpqa_rec2", "gpqa_rec3"]


def test_selection_official_needs_every_mmlu_redux_subject(tmp_path: Path, sources, store, counter) -> None:
    # the fixture holds two subjects; the 55 others would be drawn (from the shared generator) between them
    babilong, longbench = write_groups_before_mmlu(tmp_path)
    with pytest.raises(FileNotFoundError, match=r"every MMLU-Redux subject .* missing: astronomy, business_ethics"):
        build("readbench_mmlu_redux", {**sources, "babilong": babilong, "longbench": longbench}, store, counter,
              options={"selection": "official"})
