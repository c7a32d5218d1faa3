"""ReadBench's prompts: the texts of its own code, and how a prompt is split around the pages.

What ``mmlbdata/official/mmlongbench_prompts.py`` is to MMLongBench's families, this module is to ReadBench
(``mmlb_builders/readbench.py`` builds every row with it). A prompt is the benchmark's multimodal
template split where the context was (``(before, after)``), so the ``<image>`` placeholders of
the rendered pages stand exactly where the original put the images. Sources, checked template by
template (list in the ReadBench card and ``docs/prompts.md``):

* MMLU-Pro/Redux and GPQA: ``run_eval.py`` ``mmlu_mm`` / ``gpqa_mm`` (head, option images, tail),
  the category filled in as the release names it (``college_mathematics``); CoT on, as its
  ``COT_DEFAULT`` has it for these sets (off for BABILong and LongBench).
* LongBench: ``eval_config/dataset2prompt.json`` (LongBench's own templates, typos included).
* BABILong: ``babilong_prompts.build_prompt`` in multimodal mode: the instruction rewritten by
  ``_mmify_instruction``, the pages, the ``<question>`` block and the post-prompt, no examples;
  per-task wording its ``DEFAULT_PROMPTS`` (readbench @b6546cb).
"""
from __future__ import annotations

import re
from typing import Protocol, Sequence

from mmlbdata.core.tokens import IMAGE_PLACEHOLDER

#: the option letters of ReadBench's multiple-choice prompts (the reader checks answers against them)
LETTERS = "ABCDEFGHIJKLMNOP"


class MCQuestion(Protocol):
    """What a multiple-choice prompt needs of a record (``sources.readbench.MCRecord`` has it)."""

    source: str
    category: str
    question: str

MMLU_HEAD = ("The following are multiple-choice questions about {category}. The possible answers are "
             "listed in the attached image.\n\nQuestion: {question}\nOptions:\n")
MMLU_TAIL_COT = ('Think step by step and then output the answer in the format "The answer is (X)" at the '
                 'end, where X is the letter associated with the correct answer.')
GPQA_HEAD = "What is the correct answer to this question: {question}\n\nOptions:"
GPQA_TAIL_COT = "Your answer must end with Answer: (LETTER). Let's think step by step: "

# BABILong as ReadBench sends it (``babilong_prompts.build_prompt``, multimodal mode, readbench
# @b6546cb lines 233-239): three message parts, the task instruction rewritten for page images,
# the page images, then the question block and the post-prompt; no in-context examples. The parts
# are joined with nothing in between, so splitting the prompt at ``<image>`` gives them back.
BABILONG_QUESTION = "<question>\n{question}\n</question>\n{post_prompt}"
# ReadBench's ``_mmify_instruction`` (lines 208-210): the opening "I give you context" or "I will
# give you context" becomes "I will give you images with text" (qa2 and qa3 open with "I give"),
# then " context " / " context." anywhere else.
BABILONG_OPENING = (re.compile(r"\b[Ii] (give|will give) you context"), "I will give you images with text")
BABILONG_CONTEXT_WORDS = ((" context ", " images with text "), (" context.", " images with text."))

# Per-task instruction and post-prompt: ReadBench's ``babilong_prompts.py`` ``DEFAULT_PROMPTS``
# (readbench @b6546cb lines 98-193), typos such as qa2's "question.You" kept.
BABILONG_PROMPTS: dict[str, dict[str, str]] = {
    "qa1": {
        "instruction": "I will give you context with the facts about positions of different persons hidden in some "
        "random text and a question. You need to answer the question based only on the information from the "
        "facts. If a person was in different locations, use the latest location to answer the question.",
        "post_prompt": "Always return your answer in the following format: The most recent location of \u2019person\u2019 "
        "is \u2019location\u2019. Do not write anything else after that.",
    },
    "qa2": {
        "instruction": "I give you context with the facts about locations and actions of different persons hidden in "
        "some random text and a question.You need to answer the question based only on the information from the "
        "facts.\nIf a person got an item in the first location and travelled to the second location the item is "
        "also in the second location. If a person dropped an item in the first location and moved to the second "
        "location the item remains in the first location.",
        "post_prompt": "Always return your answer in the following format: The \u2019item\u2019 is in \u2019location\u2019. "
        "Do not write anything else after that.",
    },
    "qa3": {
        "instruction": "I give you context with the facts about locations and actions of different persons hidden in "
        "some random text and a question. You need to answer the question based only on the information from the "
        "facts.\nIf a person got an item in the first location and travelled to the second location the item is "
        "also in the second location. If a person dropped an item in the first location and moved to the second "
        "location the item remains in the first location.",
        "post_prompt": "Always return your answer in the following format: Before the $location_1$ the $item$ was in "
        "the $location_2$. Do not write anything else after that.",
    },
    "qa4": {
        "instruction": "I will give you context with the facts about different people, their location and actions, "
        "hidden in some random text and a question. You need to answer the question based only on the information "
        "from the facts.",
        "post_prompt": "Your answer should contain only one word - location. Do not write anything else after that.",
    },
    "qa5": {
        "instruction": "I will give you context with the facts about locations and their relations hidden in some "
        "random text and a question. You need to answer the question based only on the information from the facts.",
        "post_prompt": "Your answer should contain only one word. Do not write anything else after that. Do not "
        "explain your answer.",
    },
    "qa6": {
        "instruction": "I will give you context with the facts about people and their locations hidden in some random "
        "text and a question. You need to answer the question based only on the information from the facts. If a "
        "person was in different locations, use the latest location the person was in to answer the question.",
        "post_prompt": "Your answer should contain only one word - $yes$ or $no$. Do not write anything else after "
        "that. Do not explain your answer.",
    },
    "qa7": {
        "instruction": "I will give you context with the facts about people and objects they carry, hidden in some "
        "random text and a question. You need to answer the question based only on the information from the facts.",
        "post_prompt": "Your answer should contain only one word - none or $number_of_objects$. Do not write "
        "anything else after that. Do not explain your answer.",
    },
    "qa8": {
        "instruction": "I will give you context with the facts about people and objects they carry, hidden in some "
        "random text and a question. You need to answer the question based only on the information from the facts.",
        "post_prompt": "Your answer should contain only one or two words: $nothing$ or $object$ or $object_1$, "
        "$object_2$. Do not write anything else. Do not explain your answer.",
    },
    "qa9": {
        "instruction": "I will give you context with the facts about people and their locations hidden in some random "
        "text and a question. You need to answer the question based only on the information from the facts. If a "
        "person was in different locations, use the latest location the person was in to answer the question.",
        "post_prompt": "Your answer should contain only one word - $yes$ or $no$. Do not write anything else. Do not "
        "explain your answer.",
    },
    "qa10": {
        "instruction": "I will give you context with the facts about people and their locations hidden in some random "
        "text and a question. You need to answer the question based only on the information from the facts. If a "
        "person was in different locations, use the latest location the person was in to answer the question.",
        "post_prompt": "Your answer should contain only one word - $yes$ or $no$ or $maybe$. Do not write anything "
        "else. Do not explain your answer.",
    },
}

LONGBENCH_TEMPLATES = {
    "narrativeqa": "You are given a story, which can be either a novel or a movie script, and a question. Answer the "
    "question asconcisely as you can, using a single phrase if possible. Do not provide any explanation.\n\n"
    "Story: {context}\n\nNow, answer the question based on the story asconcisely as you can, using a single phrase "
    "if possible. Do not provide any explanation.\n\nQuestion: {input}\n\nAnswer:",
    "hotpotqa": "Answer the question based on the given passages. Only give me the answer and do not output any other "
    "words.\n\nThe following are given passages.\n{context}\n\nAnswer the question based on the given passages. "
    "Only give me the answer and do not output any other words.\n\nQuestion: {input}\nAnswer:",
    "2wikimqa": "Answer the question based on the given passages. Only give me the answer and do not output any other "
    "words.\n\nThe following are given passages.\n{context}\n\nAnswer the question based on the given passages. "
    "Only give me the answer and do not output any other words.\n\nQuestion: {input}\nAnswer:",
    "triviaqa": "Answer the question based on the given passage. Only give me the answer and do not output any other "
    "words. The following are some examples.\n\n{context}\n\n{input}",
}


def split_template(template: str, **fields: str) -> tuple[str, str]:
    """The text before and after ``{context}``, other fields filled in (braces in values kept)."""
    before, after = template.split("{context}")
    fill_in = lambda part: re.sub(r"\{(\w+)\}", lambda m: fields[m.group(1)], part)  # noqa: E731
    return fill_in(before), fill_in(after)


def with_pages(before: str, num_pages: int, after: str) -> str:
    """The prompt with one ``<image>`` per page where the context was (no separator added)."""
    return before + IMAGE_PLACEHOLDER * num_pages + after


def babilong_mm_instruction(instruction: str) -> str:
    """The instruction as ReadBench words it when the context comes as page images."""
    pattern, opening = BABILONG_OPENING
    instruction = pattern.sub(opening, instruction)
    for word, images in BABILONG_CONTEXT_WORDS:
        instruction = instruction.replace(word, images)
    return instruction


def babilong_prompt_parts(task: str, question: str) -> tuple[str, str]:
    """(text before the pages, text after them): ReadBench's BABILong message parts."""
    prompts = BABILONG_PROMPTS[task]
    after = BABILONG_QUESTION.format(question=question, post_prompt=prompts["post_prompt"])
    return babilong_mm_instruction(prompts["instruction"]), after


def longbench_prompt_parts(subset: str, question: str) -> tuple[str, str]:
    base = subset[:-2] if subset.endswith("_e") else subset
    return split_template(LONGBENCH_TEMPLATES[base], input=question)


def mc_prompt_parts(record: MCQuestion) -> tuple[str, str]:
    if record.source == "gpqa":
        return GPQA_HEAD.format(question=record.question), GPQA_TAIL_COT
    # the category as the release names it (MMLU-Redux: the subject folder, ``college_mathematics``),
    # as ReadBench's code fills it in
    return MMLU_HEAD.format(category=record.category, question=record.question), MMLU_TAIL_COT


def options_text(options: Sequence[str]) -> str:
    """The text of the options image: "A. ..." one per line."""
    return "\n".join(f"{LETTERS[i]}. {option}" for i, option in enumerate(options))

