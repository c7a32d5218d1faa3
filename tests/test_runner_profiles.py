"""The runner's model profiles held against MMLongBench's own wrappers (vlm_model/*.py @22b9f27),
run unchanged from the fetched repository (tests/mmlb_official.py).

For each profile, a tiny random model of the real architecture (tests/tiny_families.py) is loaded
twice: by the official ``load_LLM`` (its ``arguments.py`` parsing ``configs/<task>_all.yaml``, as
``eval.py`` runs it) and by ``HFBackend`` with the profile. The official ``data.py`` loads the
release fixture of tests/test_mmlb_release.py (every MMLongBench family, at 8K and 32K) and the
wrapper's ``prepare_inputs`` makes its tensors; our side reads the same release file with our
reader and makes its request as ``mmlb run`` does. Every tensor must be equal (max abs diff 0),
and so must the arguments each ``generate`` hands ``model.generate``.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from transformers import set_seed

import mmlb_official
import no_torchvision
from mmlbdata.core.report import BuildReport
from mmlbdata.dataset.registry import all_configs
from mmlbdata.official.mmlb_run_settings import CONFIG_FILES, INPUT_MAX_LENGTHS, settings_for
from mmlbdata.runner.backends import BackendOptions, describe_profile
from mmlbdata.runner.core import Request, config_budgets
from mmlbdata.runner.chat import answer_prefix_for, to_content
from mmlbdata.runner.hf import HFBackend
from mmlbdata.runner.profiles import ProfileOptions, make_profile, profile_name_for, resolve_profile
from tests.tiny_families import build_tiny
from mmlbdata.sources import mmlb_release
from test_mmlb_release import write_release

#: (yaml, dataset as the yaml names it, our config key): every dataset the release fixture has, so
#: every MMLongBench family (VRAG, NIAH, ICL, Summ, DocQA) and every loader of data.py
CASES = [("vrag_all.yaml", "infoseek", "infoseek"), ("vh_all.yaml", "vh_single", "vh_single"),
         ("vh_all.yaml", "vh_multi", "vh_multi"),
         *[("mm_niah_text_all.yaml", f"mm_niah_{task}-text", f"mm_niah_{task}_text")
           for task in ("retrieval", "counting", "reasoning")],
         *[("mm_niah_image_all.yaml", f"mm_niah_{task}-image", f"mm_niah_{task}_image")
           for task in ("retrieval", "counting", "reasoning")],
         ("icl_all.yaml", "cars196", "cars196"), ("summ_all.yaml", "gov-report", "gov_report"),
         ("summ_all.yaml", "multi-lexsum", "multi_lexsum"),
         *[("docqa_all.yaml", name, name) for name in ("longdocurl", "mmlongdoc", "slidevqa")]]
LENGTHS = (8, 32)


@pytest.fixture(scope="module")
def official(tmp_path_factory):
    no_torchvision.install()
    root = mmlb_official.checkout(tmp_path_factory.mktemp("mmlb_official"))
    saved = {k: os.environ.get(k) for k in ("LLM_JUDGE_KEY", "LLM_JUDGE_ENDPOINT", "HF_DATASETS_CACHE")}
    os.environ["LLM_JUDGE_KEY"] = "unused-placeholder"  # data.py builds its judge client; nothing calls it
    os.environ["LLM_JUDGE_ENDPOINT"] = "http://127.0.0.1:9"
    os.environ["HF_DATASETS_CACHE"] = str(tmp_path_factory.mktemp("hf_datasets"))
    yield root
    for key, value in saved.items():
        os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    _LOADED.clear()
    mmlb_official.unload(root)


@pytest.fixture(scope="module")
def release(tmp_path_factory, real_data):
    root = tmp_path_factory.mktemp("release")
    for k in LENGTHS:
        write_release(root, real_data, k)
    return root


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return tmp_path_factory.mktemp("tiny")


def _official_model(root: Path, release: Path, model_dir: Path, extra: list[str]):
    """load_LLM as eval.py calls it (flash attention and torch.compile off: CPU)."""
    import vlm_model

    args = mmlb_official.parse_arguments(root, [
        "--config", "configs/vh_all.yaml", "--model_name_or_path", str(model_dir),
        "--test_file_root", str(release / "mmlb_data"), "--image_file_root", str(release / "mmlb_image"),
        "--attn_implementation", "sdpa", "--no_torch_compile", "--preprocessing_num_workers", "1", *extra])
    return vlm_model.load_LLM(args)


_LOADED: dict = {}  # (yaml, dataset, k) -> what load_data returned: the same for every model


def _official_item(root: Path, release: Path, model, yaml: str, dataset: str, k: int):
    """(test item, data) of the dataset's K-length file as eval.py's loop reads them; the data
    is loaded once for all profiles (load_data does not see the model)."""
    import data as official_data

    args = mmlb_official.parse_arguments(root, [
        "--config", f"configs/{yaml}", "--model_name_or_path", "unused", "--test_file_root",
        str(release / "mmlb_data"), "--image_file_root", str(release / "mmlb_image"),
        "--preprocessing_num_workers", "1"])
    rows = zip(args.datasets.split(","), args.test_files.split(","), args.input_max_length.split(","),
               args.generation_max_length.split(","))
    name, test_file, max_length, gen_length = next(r for r in rows if r[0] == dataset and int(r[2]) == k * 1024)
    args.datasets, args.test_files = name, test_file
    args.input_max_length, args.generation_max_length = int(max_length), int(gen_length)
    model.max_length, model.generation_max_length = int(max_length), int(gen_length)
    key = (str(root), yaml, dataset, k)
    if key not in _LOADED:
        set_seed(args.seed)  # eval.py run_test, before load_data
        _LOADED[key] = official_data.load_data(args, name, test_file)
    return _LOADED[key], args


def _our_request(release: Path, key: str, k: int, item: dict, loaded: dict, max_images: int | None = None,
                 settings: str = "official") -> Request:
    """The request ``mmlb run`` makes of our reader's row of the official ``item``. ICL: the
    exemplars the official loader draws depend on how ``datasets.map`` runs it (worker
    processes), which the release reader's own tests cover; the row here is the item itself."""
    spec = mmlb_release.RELEASE_FILES[key]
    prompt = loaded["user_template"].format(**item)
    if spec.kind == "icl":
        row = mmlb_release.ReleaseRow(item.get("id"), prompt, [str(Path(p).relative_to(release / "mmlb_image"))
                                                               for p in item["image_list"]], "", [])
    else:
        path = release / "mmlb_data" / spec.path(k * 1024)
        rows = mmlb_release.read_release_file(path, spec.kind, BuildReport(), paper=spec.paper_samples)
        row = next(r for _, r in rows if r.prompt == prompt)
    config = f"{key}_{k}k"
    images = [{"bytes": (release / "mmlb_image" / p).read_bytes(), "path": None} for p in row.images]
    max_images, max_new = config_budgets(config, max_images, None, settings)
    content, _ = to_content(row.prompt, len(images), max_images)
    metric = all_configs()[config].config.metric
    return Request(str(row.official_id), config, metric, content, images, answer_prefix_for(metric), max_new or 0)


class Recorder:
    """Stands in for ``model.generate``: records its arguments, returns one new token."""

    def __init__(self):
        self.calls = []

    def __call__(self, **kwargs):
        self.calls.append(kwargs)
        ids = kwargs["input_ids"]
        return {"sequences": torch.cat([ids, torch.ones_like(ids[:, :1])], dim=1)}


def _assert_same_tensors(ours, theirs, where: str) -> None:
    assert sorted(ours.keys()) == sorted(theirs.keys()), where
    for key in theirs.keys():
        a, b = ours[key], theirs[key]
        assert a.shape == b.shape and a.dtype == b.dtype, (where, key, a.shape, b.shape)
        assert (a.float() - b.float()).abs().max().item() == 0 if a.numel() else True, (where, key)


def _split_call(call: dict) -> tuple[dict, dict]:
    tensors = {k: v for k, v in call.items() if isinstance(v, torch.Tensor)}
    return tensors, {k: v for k, v in call.items() if k not in tensors}


def _check_profile(profile_name: str, official, release, models, extra: list[str] | None = None,
                   options: ProfileOptions | None = None, max_images: int | None = None) -> None:
    model_dir = build_tiny(profile_name, models)
    theirs = _official_model(official, release, model_dir, extra or [])
    ours = HFBackend(str(model_dir), device="cpu", dtype="bfloat16",
                     profile=make_profile(profile_name_for(str(model_dir)), str(model_dir), options))
    assert ours.profile.name == profile_name
    theirs.model.generate, ours.model.generate = Recorder(), Recorder()
    checked = 0
    for yaml, dataset, key in CASES:
        for k in LENGTHS:
            loaded, _args = _official_item(official, release, theirs, yaml, dataset, k)
            for item in loaded["data"]:
                where = f"{profile_name} {dataset} {k}K {item.get('id')}"
                expected = theirs.prepare_inputs(item, loaded)
                request = _our_request(release, key, k, item, loaded, max_images)
                assert request.prefix == loaded["system_template"], where
                prepared = ours.prepare([request])
                _assert_same_tensors(prepared.inputs[0], expected, where)
                theirs.generate(inputs=expected)
                ours.generate(prepared)
                (t_in, t_args), (o_in, o_args) = (_split_call(theirs.model.generate.calls[-1]),
                                                  _split_call(ours.model.generate.calls[-1]))
                _assert_same_tensors(o_in, t_in, where + " generate")
                if options and options.stop_newline:  # the wrapper's list(set(...)): order is no setting
                    t_args["eos_token_id"], o_args["eos_token_id"] = (sorted(t_args["eos_token_id"]),
                                                                      sorted(o_args["eos_token_id"]))
                assert o_args == t_args, where
                checked += 1
    assert checked >= 2 * len(CASES)


def test_qwen2_vl_profile_equals_the_official_wrapper(official, release, models):
    _check_profile("qwen2_vl", official, release, models)


def test_qwen2_5_vl_profile_equals_the_official_wrapper(official, release, models):
    _check_profile("qwen2_5_vl", official, release, models, extra=["--stop_newline", "True"],
                   options=ProfileOptions(stop_newline=True))


def test_gemma3_profile_equals_the_official_wrapper(official, release, models):
    """With --max_image_num 2 (gemma3.py's truncate_images) as --max-images 2."""
    _check_profile("gemma3", official, release, models, extra=["--max_image_num", "2"], max_images=2)


def test_idefics3_profile_equals_the_official_wrapper(official, release, models):
    """With --image_resize 0.5, --do_image_splitting False and sampling (temperature, top-p)."""
    _check_profile("idefics", official, release, models,
                   extra=["--image_resize", "0.5", "--do_image_splitting", "False", "--do_sample", "True",
                          "--temperature", "0.7", "--top_p", "0.9"],
                   options=ProfileOptions(image_resize=0.5, do_image_splitting=False, do_sample=True,
                                          temperature=0.7, top_p=0.9))


def test_llava_onevision_profile_equals_the_official_wrapper(official, release, models):
    """With --image_resize 0.5: one crop per image (int(4 x 0.25)), inputs in bf16 as the wrapper casts them."""
    _check_profile("llava_onevision", official, release, models, extra=["--image_resize", "0.5"],
                   options=ProfileOptions(image_resize=0.5))


def test_yarn_config_is_the_official_wrappers(official, models):
    """--use-yarn: the official wrapper sets max_position_embeddings and rope_scaling on the
    config object it loads; transformers 4.49 (its pin) read them there, transformers 5 reads the
    text model's from ``text_config``. The YaRN values and 32,768 positions must be the wrapper's,
    where this transformers reads them, and the loaded text model must scale with YaRN."""
    import vlm_model

    model_dir = build_tiny("qwen2_5_vl", models)
    args = mmlb_official.parse_arguments(official, ["--config", "configs/vh_all.yaml", "--model_name_or_path",
                                                    str(model_dir), "--attn_implementation", "sdpa",
                                                    "--no_torch_compile", "--use_yarn"])
    theirs = vlm_model.load_LLM(args).model.config
    ours = HFBackend(str(model_dir), device="cpu", profile=make_profile(
        "qwen2_5_vl", str(model_dir), ProfileOptions(use_yarn=True))).model
    set_by_wrapper = dict(theirs.rope_parameters)  # where the wrapper's assignment lands under transformers 5
    rope = ours.config.text_config.rope_parameters
    for name in ("factor", "original_max_position_embeddings", "mrope_section"):
        assert rope[name] == set_by_wrapper[name], name
    assert rope["rope_type"] == set_by_wrapper["type"] == "yarn"
    assert ours.config.text_config.max_position_embeddings == theirs.max_position_embeddings == 32768
    assert rope["rope_theta"] == theirs.text_config.rope_parameters["rope_theta"]
    rotary = ours.model.language_model.rotary_emb
    assert rotary.rope_type == "yarn" and rotary.attention_scaling > 1
    assert theirs.to_dict()["text_config"]["rope_parameters"]["rope_type"] == "default"  # why we set text_config


def test_settings_table_equals_the_official_yaml_files(official):
    """mmlb_run_settings holds what configs/*.yaml say, for every dataset and length."""
    import yaml

    for file, (datasets, generation, samples) in CONFIG_FILES.items():
        config = yaml.safe_load((official / "configs" / file).read_text())
        names = config["datasets"].split(",")
        lengths = [int(x) for x in str(config["input_max_length"]).split(",")]
        gens = [int(x) for x in str(config["generation_max_length"]).split(",")]
        assert sorted(set(names)) == sorted(datasets) and config["max_test_samples"] == samples, file
        assert "max_image_num" not in config and "image_resize" not in config, file
        for name, length, gen in zip(names, lengths, gens):
            assert length in INPUT_MAX_LENGTHS and gen == generation, (file, name)
            ours = settings_for(f"{name.replace('-', '_')}_{length // 1024}k")
            assert (ours.dataset, ours.input_max_length, ours.generation_max_length, ours.max_test_samples,
                    ours.max_image_num, ours.image_resize) == (name, length, gen, samples, None, None)
    assert settings_for("vh_single_256k") is None and settings_for("readbench_mmlu_pro") is None


@pytest.mark.parametrize("model, profile, says", [
    ("Qwen/Qwen2.5-VL-7B-Instruct", "qwen2_5_vl", "qwen2_vl.py"),
    ("Qwen/Qwen2-VL-72B-Instruct-AWQ", "qwen2_vl", "qwen2_vl.py"),
    ("kosbu/QVQ-72B-Preview-AWQ", "qwen2_vl", "qwen2_vl.py"),
    ("HuggingFaceM4/Idefics3-8B-Llama3", "idefics", "idefics.py"),
    ("google/gemma-3-27b-it", "gemma3", "gemma3.py"),
    ("llava-hf/llava-onevision-qwen2-7b-ov-hf", "llava_onevision", "llava_onevision.py"),
    ("OpenGVLab/InternVL3-8B", None, "internvl.py, which this runner does not reproduce"),
    ("meta-llama/Llama-3.2-11B-Vision-Instruct", None, "mllama.py, which this runner does not reproduce"),
    ("Qwen/Qwen2.5-7B-Instruct", None, "text_only_model.py"),
    ("my/own-vlm", None, "no MMLongBench wrapper matches"),
])
def test_profile_is_picked_from_the_model_name_as_load_llm_picks_it(model, profile, says):
    assert profile_name_for(model) == profile
    line = describe_profile(BackendOptions("hf", model))
    assert says in line and line.startswith("profile: ")
    assert resolve_profile(model, "generic")[0] is None
    assert resolve_profile("my/own-vlm", "gemma3")[0].name == "gemma3"
    assert "generic" in describe_profile(BackendOptions("vllm", model))


def _run_cli(argv: list[str]) -> int:
    import argparse

    from mmlbdata.cli import run as run_cmd

    parser = argparse.ArgumentParser(prog="mmlb")
    run_cmd.register(parser.add_subparsers())
    args = parser.parse_args(["run", *argv])
    return args.func(args)


@pytest.fixture(scope="module")
def built_vh(tmp_path_factory, coco_mini):
    from tests.smoke import write_built

    pics = [p.read_bytes() for p in sorted((coco_mini / "val2017").glob("*.jpg"))[:3]]
    rows = [{"id": f"r{i}", "dataset": "vh_single", "length": 8192, "num_tokens": 0,
             "prompt": "Images:\n" + "\n".join(["<image>"] * 3) + f"\n\nQuestion: is there a dog? ({i})",
             "images": [{"bytes": b, "path": None} for b in pics], "question": "dog?", "answers": ["yes"],
             "metric": "binary_acc", "meta": "{}"} for i in range(3)]
    return write_built(tmp_path_factory.mktemp("built"), {"vh_single_8k": rows, "vh_single_512k": rows[:1]})


def test_mmlb_run_says_which_profile_ran_and_uses_the_official_budgets(built_vh, models, tmp_path, capsys,
                                                                      monkeypatch, caplog):
    """The CLI path end to end with the tiny Gemma 3: the profile line, the per-dataset
    generation_max_length (128 for vh_single_8k; 512K is in no yaml: the per-metric budget),
    --max-new-tokens over both, and predictions written."""
    from mmlbdata.runner import hf

    seen = []
    original = hf.HFBackend._generate_one

    def spy(self, request, inputs):
        seen.append((request.config, self.generation_kwargs(request)["max_new_tokens"]))
        return original(self, request, inputs)

    monkeypatch.setattr(hf.HFBackend, "_generate_one", spy)
    model = build_tiny("gemma3", models)
    out = tmp_path / "preds.jsonl"
    caplog.set_level("INFO", logger="mmlbdata.runner")
    assert _run_cli(["--model", str(model), "--device", "cpu", "--data", str(built_vh), "--config", "vh_single_8k",
                     "--config", "vh_single_512k", "--out", str(out), "--limit", "2", "--workers", "0"]) == 0
    captured = capsys.readouterr()
    assert "profile: gemma3 (MMLongBench vlm_model/gemma3.py @22b9f27)" in captured.err
    assert seen == [("vh_single_8k", 128), ("vh_single_8k", 128), ("vh_single_512k", 128)]
    assert "vh_single_8k: MMLongBench's configs/vh_all.yaml: generation_max_length 128 (running with 128)" in \
        caplog.text and "vh_single_512k: MMLongBench" not in caplog.text
    assert len(out.read_text().splitlines()) == 3 and "3 examples" in captured.out
    assert [json.loads(line)["seed"] for line in out.read_text().splitlines()] == [42] * 3  # eval.py's set_seed
    seen.clear()
    assert _run_cli(["--model", str(model), "--device", "cpu", "--data", str(built_vh), "--config", "vh_single_8k",
                     "--out", str(tmp_path / "p2.jsonl"), "--limit", "1", "--max-new-tokens", "2",
                     "--model-profile", "generic"]) == 0
    assert seen == [] and "profile: generic (asked for with --model-profile generic)" in capsys.readouterr().err
    assert "seed" not in json.loads((tmp_path / "p2.jsonl").read_text())  # greedy, never seeded


def test_the_summary_gives_the_gpu_peak_the_batches_recorded(built_vh, tmp_path, monkeypatch, caplog):
    """On CUDA the summary says the peak (it was n/a while the profile file had it): recorded
    after every batch; no log line repeats the summary (issue 43, defect 5)."""
    import logging

    from mmlbdata.runner import core
    from mmlbdata.runner.core import Generation, PipelineOptions

    class Echo:
        def generate(self, requests):
            return [Generation("Answer: yes", 1, 1) for _ in requests]

    peaks = iter([2**30, 3 * 2**30, None, None])
    monkeypatch.setattr(core, "gpu_peak_memory", lambda: next(peaks, None))
    with caplog.at_level(logging.INFO, logger="mmlbdata.runner"):
        stats = core.run(Echo(), built_vh, ["vh_single_8k"], tmp_path / "p.jsonl",
                         pipeline=PipelineOptions(workers=0, profile=tmp_path / "prof.jsonl"), limit=2)
    assert "GPU peak memory 3.00 GiB" in stats.line()
    assert not any("GPU peak memory" in r.getMessage() for r in caplog.records)
    assert [json.loads(x)["gpu_peak_bytes"] for x in (tmp_path / "prof.jsonl").read_text().splitlines()] == \
        [2**30, 3 * 2**30]


def test_without_a_profile_file_the_gpu_peak_is_read_once_per_config(built_vh, tmp_path, monkeypatch, caplog):
    """No --profile: no per-batch look at CUDA (issue 36: per-row work in the reader); the summary
    still gives the peak, read once when the run ends."""
    import logging

    from mmlbdata.runner import core
    from mmlbdata.runner.core import Generation, PipelineOptions

    class Echo:
        def generate(self, requests):
            return [Generation("Answer: yes", 1, 1) for _ in requests]

    calls = []
    monkeypatch.setattr(core, "gpu_peak_memory", lambda: calls.append(1) or 3 * 2**30)
    with caplog.at_level(logging.INFO, logger="mmlbdata.runner"):
        stats = core.run(Echo(), built_vh, ["vh_single_8k"], tmp_path / "p.jsonl",
                         pipeline=PipelineOptions(workers=0), limit=3)
    assert stats.examples == 3 and len(calls) == 1  # the summary's
    assert "GPU peak memory 3.00 GiB" in stats.line()


def test_selection_tests_the_names_load_llm_tests_in_its_order():
    """profiles.SELECTION against vlm_model/__init__.py itself: the same substrings, same order."""
    import re

    from mmlbdata.runner.profiles import SELECTION

    source = mmlb_official.show("vlm_model/__init__.py").decode()
    tests = [line for line in source.splitlines() if re.match(r"\s*(if|elif) ", line)]  # not the comments
    official = [needle for line in tests for needle in re.findall(r'"([^"]+)" in lower_model_name', line)]
    assert [needle for needles, _ in SELECTION for needle in needles] == official


# -- images as the wrappers open them: EXIF orientation, alpha ----------------------------------------------

def _unusual_image(folder: Path, kind: str) -> Path:
    """``sideways``: a photo stored sideways with an EXIF orientation tag (6: turn 90 degrees to show
    it), as cameras write them; ``alpha``: an RGBA PNG whose colours differ where it is transparent
    (a rendered page's)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    pixels = torch.arange(96 * 64 * 3, dtype=torch.int64).reshape(64, 96, 3) % 251
    if kind == "sideways":
        photo = Image.fromarray(pixels.to(torch.uint8).numpy(), "RGB")
        exif = photo.getexif()
        exif[0x0112] = 6
        photo.save(folder / "sideways.jpg", exif=exif.tobytes(), quality=95)
        return folder / "sideways.jpg"
    alpha = Image.fromarray(((pixels[:, :, :1].repeat(1, 1, 4) * 3 + torch.tensor([0, 80, 160, 0])) % 256)
                            .to(torch.uint8).numpy(), "RGBA")
    alpha.save(folder / "alpha.png")
    return folder / "alpha.png"


@pytest.mark.parametrize("kind", ["sideways", "alpha"])
@pytest.mark.parametrize("profile_name", ["qwen2_vl", "gemma3", "idefics", "llava_onevision"])
def test_exif_and_alpha_images_reach_the_model_as_the_wrapper_opens_them(profile_name, kind, official, release,
                                                                         models, tmp_path):
    """Each wrapper's own opening of an image path (@22b9f27): qwen2_vl.py through qwen-vl-utils'
    fetch_image (Image.open, RGBA on white, no EXIF turn), gemma3.py L112-120 the path in the messages,
    opened by the processor's transformers ``load_image`` (EXIF orientation, convert("RGB")),
    idefics.py L231 ``load_image``, llava_onevision.py L114 ``Image.open(...).convert('RGB')``. The
    Gemma 3 profile used to hand the processor the image as stored (unturned; RGBA composited on white)."""
    paths = [_unusual_image(tmp_path / "images", kind)]
    model_dir = build_tiny(profile_name, models)
    theirs = _official_model(official, release, model_dir, [])
    ours = HFBackend(str(model_dir), device="cpu", dtype="bfloat16",
                     profile=make_profile(profile_name_for(str(model_dir)), str(model_dir)))
    prompt = "Look at <image>. Is it upright?"
    item = {"context": prompt, "image_list": [str(p) for p in paths]}
    expected = theirs.prepare_inputs(item, {"user_template": "{context}", "system_template": "Answer:"})
    content, _ = to_content(prompt, 1)
    images = [{"bytes": p.read_bytes(), "path": None} for p in paths]
    request = Request("x", "vh_single_8k", "binary_acc", content, images, "Answer:", 8)
    _assert_same_tensors(ours.prepare([request]).inputs[0], expected, f"{profile_name} {kind}")


# -- generation: --generation-min-length, the seed eval.py sets before each dataset ------------------------

def test_generation_min_length_is_the_wrappers_min_new_tokens(official, release, models):
    """arguments.py L38 @22b9f27 ``--generation_min_length`` reaches ``generate`` as ``min_new_tokens``
    (gemma3.py L162); ``mmlb run --generation-min-length`` does the same."""
    model_dir = build_tiny("gemma3", models)
    theirs = _official_model(official, release, model_dir, ["--generation_min_length", "5"])
    args = _parse_run(["--model", str(model_dir), "--data", "d", "--config", "vh_single_8k", "--out", "o",
                       "--generation-min-length", "5"])
    from mmlbdata.cli.run import profile_options

    ours = HFBackend(str(model_dir), device="cpu", dtype="bfloat16",
                     profile=make_profile("gemma3", str(model_dir), profile_options(args)))
    theirs.model.generate, ours.model.generate = Recorder(), Recorder()
    loaded, _args = _official_item(official, release, theirs, "vh_all.yaml", "vh_single", 8)
    item = loaded["data"][0]
    theirs.generate(inputs=theirs.prepare_inputs(item, loaded))
    ours.generate(ours.prepare([_our_request(release, "vh_single", 8, item, loaded)]))
    t_args, o_args = (_split_call(theirs.model.generate.calls[-1])[1], _split_call(ours.model.generate.calls[-1])[1])
    assert o_args == t_args and o_args["min_new_tokens"] == 5


def _parse_run(argv: list[str]):
    import argparse

    from mmlbdata.cli import run as run_cmd

    parser = argparse.ArgumentParser(prog="mmlb")
    run_cmd.register(parser.add_subparsers())
    return parser.parse_args(["run", *argv])


def test_sampling_draws_what_eval_py_draws_seeded_before_each_dataset(official, release, models, tmp_path):
    """eval.py L37 @22b9f27 calls ``set_seed(args.seed)`` (arguments.py L45: 42) at the start of each
    dataset's ``run_test``; with ``--do_sample True`` the tokens drawn follow from it. Official
    ``run_test`` runs unchanged on two datasets of vh_all.yaml with the tiny Gemma 3 sampling; the
    profile (seeded before each config's first generation) draws the same text for every example,
    whatever the random state was before, and records the seed. Unseeded it drew other tokens."""
    import eval as official_eval

    model_dir = build_tiny("gemma3", models)
    sampling = ["--do_sample", "True", "--temperature", "1.0", "--top_p", "1.0"]
    theirs = _official_model(official, release, model_dir, sampling)
    ours = HFBackend(str(model_dir), device="cpu", dtype="bfloat16", profile=make_profile(
        "gemma3", str(model_dir), ProfileOptions(do_sample=True, temperature=1.0, top_p=1.0)))
    expected, got, checked = [], [], 0
    for dataset in ("vh_single", "vh_multi"):
        loaded, args = _official_item(official, release, theirs, "vh_all.yaml", dataset, 8)
        args.output_dir, args.overwrite, args.num_workers = str(tmp_path / "out"), True, 0
        theirs.generation_max_length = 6
        os.makedirs(args.output_dir, exist_ok=True)
        path = official_eval.run_test(args, theirs, args.datasets, args.test_files)
        expected += [r["output"] for r in json.loads(Path(path).read_text())["data"]]
        torch.manual_seed(1234 + checked)  # whatever state the process is in: the seed decides
        torch.rand(7)
        for item in loaded["data"]:
            request = _our_request(release, dataset, 8, item, loaded)
            request.max_new_tokens = 6
            [generation] = ours.generate(ours.prepare([request]))
            got.append(loaded["system_template"] + generation.text)
            assert generation.seed == 42
            checked += 1
    assert checked >= 2 and got == expected
    assert len(set(expected)) > 1  # sampling: the examples differ, so the draw is what is compared
