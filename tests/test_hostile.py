"""Hostile input (issue #17 section 3): each damaged record is named, skipped and reported.

Fixtures are real samples from ``MMLB_TEST_DATA`` copied into ``tmp_path`` and damaged there:
decompression bombs (real JPEGs whose frame header declares 20000x20000), an aspect ratio over
200, image paths leaving the source root (``..``, absolute, a symlink out), COCO files without
their lists, duplicate image ids.
"""
from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from PIL import Image

from mmlbdata.dataset.build import build_configs
from mmlbdata.core.report import BuildReport, source_label
from mmlbdata.sources.coco import read_instances
from mmlbdata.sources.coco_captions import read_captions
from mmlbdata.core.store import (MAX_ASPECT_RATIO, MAX_IMAGE_PIXELS, BadImageError, ImageLimits, ImageStore,
                            inspect_image)


# --------------------------------------------------------------------------- damaged images

def jpeg_declaring(data: bytes, width: int, height: int) -> bytes:
    """A real JPEG whose first frame header (SOFn) claims ``width`` x ``height``; the entropy-coded
    data stays the small original, so only a header reader can tell."""
    at = 2
    while True:
        assert data[at] == 0xFF
        marker, (length,) = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])
        if marker in (0xC0, 0xC1, 0xC2):
            return data[:at + 5] + struct.pack(">HH", height, width) + data[at + 9:]
        at += 2 + length


def png_declaring(width: int, height: int) -> bytes:
    """A 57-byte PNG: signature, an IHDR declaring ``width`` x ``height``, an empty IDAT, IEND."""
    def chunk(kind: bytes, body: bytes) -> bytes:
        import zlib

        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"") + chunk(b"IEND", b"")


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def no_decoding(monkeypatch):
    """Any attempt to decode pixels fails the test: limits must be read from headers only."""
    def refuse(*args, **kwargs):
        raise AssertionError("an image was decoded")

    monkeypatch.setattr(Image.Image, "load", refuse)


def test_default_limits_are_pillows_threshold_and_qwens_ratio():
    # PIL/Image.py: MAX_IMAGE_PIXELS = int(1024 * 1024 * 1024 // 4 // 3)
    assert MAX_IMAGE_PIXELS == 1024 * 1024 * 1024 // 4 // 3 == Image.MAX_IMAGE_PIXELS
    assert MAX_ASPECT_RATIO == 200


def test_jpeg_and_png_bombs_are_refused_from_the_header(coco_mini, tmp_path, no_decoding, monkeypatch):
    monkeypatch.delenv("MMLB_MAX_IMAGE_PIXELS", raising=False)
    real = sorted((coco_mini / "val2017").glob("*.jpg"))[0].read_bytes()
    (tmp_path / "bomb.jpg").write_bytes(jpeg_declaring(real, 20000, 20000))
    (tmp_path / "bomb.png").write_bytes(png_declaring(20000, 20000))
    for name in ("bomb.jpg", "bomb.png"):
        with pytest.raises(BadImageError) as err:
            inspect_image(tmp_path / name)
        assert err.value.path.endswith(name)
        assert "20000x20000" in err.value.reason and "pixel limit" in err.value.reason
    # the generated-image door refuses the same bytes
    with pytest.raises(BadImageError, match="pixel limit"):
        ImageStore(tmp_path / "store").put_bytes(png_declaring(20000, 20000), "png")
    assert not (tmp_path / "store" / "objects").exists()


def test_pixel_limit_is_exact_and_overridable(tmp_path, monkeypatch):
    monkeypatch.delenv("MMLB_MAX_IMAGE_PIXELS", raising=False)
    (tmp_path / "at.png").write_bytes(png_declaring(9459, 9459))     # 89,472,681 <= 89,478,485
    (tmp_path / "over.png").write_bytes(png_declaring(9460, 9460))   # 89,491,600 >  89,478,485
    assert inspect_image(tmp_path / "at.png").width == 9459
    with pytest.raises(BadImageError):
        inspect_image(tmp_path / "over.png")
    monkeypatch.setenv("MMLB_MAX_IMAGE_PIXELS", "100_000_000")
    assert ImageStore(tmp_path / "s").ref(tmp_path / "over.png").height == 9460
    assert ImageStore(tmp_path / "s", limits=ImageLimits(max_pixels=1000)).limits.max_pixels == 1000
    monkeypatch.setenv("MMLB_MAX_IMAGE_PIXELS", "lots")
    with pytest.raises(ValueError, match="MMLB_MAX_IMAGE_PIXELS"):
        ImageLimits.from_env()


def test_aspect_ratio_over_200_is_refused(tmp_path, monkeypatch, no_decoding):
    monkeypatch.delenv("MMLB_MAX_ASPECT_RATIO", raising=False)
    # Qwen2-VL's smart_resize raises when max(h, w) / min(h, w) > 200 (200 itself passes)
    (tmp_path / "ok.png").write_bytes(png_declaring(2000, 10))
    (tmp_path / "thin.png").write_bytes(png_declaring(10, 2010))
    assert inspect_image(tmp_path / "ok.png").width == 2000
    with pytest.raises(BadImageError, match="aspect ratio 201"):
        inspect_image(tmp_path / "thin.png")
    monkeypatch.setenv("MMLB_MAX_ASPECT_RATIO", "500")
    assert inspect_image(tmp_path / "thin.png").height == 2010


# --------------------------------------------------------------------------- COCO

OUTSIDE_NAME = "outside_secret.jpg"


@pytest.fixture
def hostile_coco(coco_mini, tmp_path):
    """coco_mini copied and damaged: returns (root, {what: detail})."""
    root = tmp_path / "coco"
    shutil.copytree(coco_mini, root)
    val = sorted((root / "val2017").glob("*.jpg"))
    outside = tmp_path / OUTSIDE_NAME  # a valid image (bytes no source image has) never to be reached
    with Image.open(val[10]) as photo:
        photo.save(outside, "JPEG", quality=40)
    val[0].write_bytes(jpeg_declaring(val[0].read_bytes(), 20000, 20000))
    with Image.open(val[1]) as photo:
        photo.convert("RGB").resize((1206, 6)).save(val[1], "JPEG")  # aspect ratio 201
    (root / "val2017" / "link.jpg").symlink_to(outside)

    ann_file = root / "annotations" / "instances_val2017.json"
    data = json.loads(ann_file.read_text())
    template = next(a for a in data["annotations"] if a["image_id"] == data["images"][5]["id"])
    hostile = {900001: "../../" + OUTSIDE_NAME, 900002: str(outside), 900003: "link.jpg",
               900004: "../../../../../../../../etc/passwd"}
    for image_id, name in hostile.items():
        data["images"].append({**data["images"][5], "id": image_id, "file_name": name})
        data["annotations"].append({**template, "id": image_id, "image_id": image_id})
    duplicate_id = data["images"][2]
    data["images"].append({**duplicate_id, "file_name": val[10].name})   # same id, other file
    data["images"].append({**data["images"][3], "id": 900005})           # same file, other id
    data["annotations"].append({**template, "id": 900005, "image_id": 900005})
    ann_file.write_text(json.dumps(data))

    train_file = root / "annotations" / "instances_train2017.json"
    train = json.loads(train_file.read_text())
    del train["categories"]
    train_file.write_text(json.dumps(train))
    return root, {"bomb": val[0], "thin": val[1], "outside": outside, "ann": ann_file, "train": train_file,
                  "dup_id": duplicate_id, "dup_file": data["images"][3]}


def _reasons(report: BuildReport) -> list[str]:
    return [str(s) for s in report.skipped]


def test_coco_reader_refuses_every_hostile_entry(hostile_coco, tmp_path, monkeypatch):
    monkeypatch.delenv("MMLB_MAX_IMAGE_PIXELS", raising=False)
    root, bad = hostile_coco
    report = BuildReport()
    images = read_instances(root, ImageStore(tmp_path / "store"), report)
    lines = _reasons(report)
    text = "\n".join(lines)
    assert f"{bad['train']}: not a COCO instances file (no categories list); file skipped" in lines
    assert any(line.startswith(str(bad["bomb"])) and "pixel limit" in line for line in lines)
    assert any(line.startswith(str(bad["thin"])) and "aspect ratio" in line for line in lines)
    for image_id in (900001, 900002, 900003, 900004):
        assert any(f"[image_id={image_id}]" in line and "refused" in line and str(bad["ann"]) in line
                   for line in lines), image_id
    assert f"duplicate image id {bad['dup_id']['id']}" in text
    assert f"duplicate file_name {bad['dup_file']['file_name']!r}" in text
    used = [Path(i.ref.path) for i in images]
    assert len(used) == len({p.resolve() for p in used}) == len({i.image_id for i in images})
    assert all(p.resolve().is_relative_to((root / "val2017").resolve()) for p in used)
    assert bad["bomb"] not in used and bad["thin"] not in used
    # the train split lost its categories: none of its images is used; val's still are (79 - 2)
    assert {i.split for i in images} == {"val2017"} and len(images) == 77


def test_vh_build_on_hostile_coco_embeds_none_of_it(hostile_coco, tokenizer_path, tmp_path, monkeypatch):
    monkeypatch.delenv("MMLB_MAX_IMAGE_PIXELS", raising=False)
    root, bad = hostile_coco
    result = build_configs(["vh_single_8k"], {"coco": root}, tmp_path / "out", limit=4,
                           store_root=tmp_path / "store", tokenizer=tokenizer_path, progress=False)[0]
    assert result.ok, result.error
    files = {s["file"] for s in result.report["skipped"]}
    assert {source_label(bad[k], {"coco": root}) for k in ("bomb", "thin", "train")} <= files
    forbidden = {sha(bad["outside"].read_bytes()), sha(bad["bomb"].read_bytes()), sha(bad["thin"].read_bytes())}
    from mmlbdata.exports import iter_rows

    rows = [row["images"] for row in iter_rows(tmp_path / "out", "vh_single_8k", columns=["images"])]
    assert len(rows) == 24
    for row in rows:
        digests = [sha(img["bytes"]) for img in row]
        assert not forbidden & set(digests)
        assert len(digests) == len(set(digests)), "an image appears twice in one row"


def test_coco_captions_missing_lists_and_duplicates(coco_mini, tmp_path):
    root = tmp_path / "coco"
    shutil.copytree(coco_mini, root, ignore=shutil.ignore_patterns("instances_*", "person_*"))
    val_file = root / "annotations" / "captions_val2017.json"
    data = json.loads(val_file.read_text())
    data["images"].append(dict(data["images"][0]))  # the same image listed twice
    data["images"].append({**data["images"][1], "id": 999999, "file_name": "../../x.jpg"})
    data["annotations"].append({"id": 1, "image_id": 999999, "caption": "a hostile caption"})
    val_file.write_text(json.dumps(data))
    train_file = root / "annotations" / "captions_train2017.json"
    train_file.write_text(json.dumps({"annotations": []}))
    report = BuildReport()
    images = read_captions(root, ImageStore(tmp_path / "store"), report)
    text = "\n".join(_reasons(report))
    assert f"{train_file}: not a COCO captions file (no images list)" in text
    assert f"duplicate image id {data['images'][0]['id']}" in text
    assert "[image_id=999999]" in text and "escapes" in text
    assert len(images) == 79 and len({i.image_id for i in images}) == 79


# --------------------------------------------------------------------------- every other reader

@pytest.fixture
def outside(coco_mini, tmp_path) -> Path:
    """A valid real JPEG outside every source root of these tests."""
    path = tmp_path / OUTSIDE_NAME
    shutil.copyfile(sorted((coco_mini / "val2017").glob("*.jpg"))[0], path)
    return path


def test_vhs_needles_and_distractors_leaving_the_coco_root(coco_mini, outside, tmp_path):
    from mmlbdata.sources.vhs import read_vhs, resolve_image

    coco = tmp_path / "coco"
    shutil.copytree(coco_mini / "val2017", coco / "val2017")
    real = sorted(p.name for p in (coco / "val2017").glob("*.jpg"))
    turns = [{"from": "human", "value": "<image>\nIs there a dog?"}, {"from": "gpt", "value": "Yes"}]
    entries = [{"conversations": turns, "pos_image": ["../" + OUTSIDE_NAME], "neg_image": []},
               {"conversations": turns, "pos_image": [f"val2017/{real[0]}"],
                "neg_image": [f"val2017/{real[1]}", "coco/../../" + OUTSIDE_NAME, str(outside), f"val2017/{real[2]}",
                              f"coco/val2017/{real[1]}", f"val2017/{real[0]}"]},
               {"conversations": turns, "pos_image": [f"val2017/{real[3]}", f"coco/val2017/{real[3]}"],
                "neg_image": []}]
    release = tmp_path / "visual_haystack_3.json"
    release.write_text(json.dumps(entries))
    report = BuildReport()
    questions = list(read_vhs(release, coco, ImageStore(tmp_path / "s"), report))
    assert len(questions) == 1
    assert [p.name for p in questions[0].distractors] == [real[1], real[2]]
    lines = _reasons(report)
    assert len(lines) == 6 and all("refused" in line for line in lines[:3])
    assert "[entry 0]" in lines[0] and "needle image unusable" in lines[0]
    assert all("is already in the haystack; duplicate dropped" in line for line in lines[3:5])
    assert "[entry 2]" in lines[5] and "names one image twice" in lines[5]
    with pytest.raises(BadImageError, match="escapes"):
        resolve_image(coco, "val2017/../../" + OUTSIDE_NAME)


def test_mmniah_line_naming_a_path_out_is_skipped(real_data, outside, tmp_path):
    from mmlbdata.sources.mmniah import read_mmniah
    from tests.test_mmniah import make_release

    root = tmp_path / "mmniah"
    make_release(root, real_data)
    ann = root / "annotations" / "retrieval-text.jsonl"
    lines = ann.read_text().splitlines()
    row = json.loads(lines[1])
    row["images_list"][0] = "../../" + OUTSIDE_NAME
    ann.write_text("\n".join([lines[0], json.dumps(row)] + lines[2:]) + "\n")
    report = BuildReport()
    records = list(read_mmniah(root, "retrieval", "text", report))
    assert len(records) == len(lines) - 1
    assert report.skipped[0].file == str(ann) and report.skipped[0].record == "line 2"
    assert "images_list entry" in report.skipped[0].reason and "escapes" in report.skipped[0].reason
    assert all(outside.name not in str(seg) for r in records for doc in r.documents for seg in doc)


def test_icl_folders_and_inat_refuse_images_out(coco_mini, outside, tmp_path):
    from mmlbdata.sources.icl import read_class_folders, read_inat

    photos = sorted((coco_mini / "val2017").glob("*.jpg"))[:6]
    root = tmp_path / "classes"
    for i, photo in enumerate(photos):
        (root / f"class{i % 2}").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(photo, root / f"class{i % 2}" / photo.name)
    (root / "class0" / "link.jpg").symlink_to(outside)
    store = ImageStore(tmp_path / "s")
    pools = read_class_folders(root, store, BuildReport())[""]
    items = {i.key: i for pool in pools.values() for i in pool.train + pool.test}
    with pytest.raises(BadImageError, match="escapes"):
        items["class0/link.jpg"].ref
    assert items[f"class1/{photos[1].name}"].ref.width > 0

    inat = tmp_path / "inat"
    shutil.copytree(root, inat / "imgs", symlinks=True)
    cats = [{"id": 0, "name": "Species 0", "supercategory": "Birds"}]
    for split, names in (("train", ["../" + OUTSIDE_NAME, f"imgs/class1/{photos[1].name}"]),
                         ("val", [f"imgs/class1/{photos[3].name}", str(outside)])):
        images = [{"id": j, "file_name": name} for j, name in enumerate(names)]
        anns = [{"id": j, "image_id": j, "category_id": 0} for j in range(len(names))]
        anns.append({"id": 99, "image_id": 1, "category_id": 0})  # image 1 labelled twice
        (inat / f"{split}.json").write_text(json.dumps({"images": images, "annotations": anns, "categories": cats}))
    report = BuildReport()
    pool = read_inat(inat, store, report)["Birds"]["Species 0"]
    refused = [item.key for item in pool.train + pool.test if _refused(item)]
    assert sorted(refused) == sorted(["../" + OUTSIDE_NAME, str(outside)])
    assert len(pool.train) == len(pool.test) == 2
    assert [s.record for s in report.skipped] == ["annotation 99", "annotation 99"]
    assert "image 1 already labelled; duplicate dropped" in report.skipped[0].reason


def _refused(item) -> bool:
    try:
        item.ref
    except BadImageError as err:
        assert "refused" in err.reason
        return True
    return False


def test_viquae_and_infoseek_images_out_are_reported(coco_mini, outside, tmp_path):
    from mmlbdata.sources.infoseek import read_infoseek
    from mmlbdata.sources.viquae import read_viquae

    root = tmp_path / "release"
    (root / "images").mkdir(parents=True)
    photo = sorted((coco_mini / "val2017").glob("*.jpg"))[1]
    shutil.copyfile(photo, root / "images" / "ok.jpg")
    output = {"original_answer": "Tang", "answer": ["Tang"], "provenance": [{"wikipedia_id": "1"}]}
    records = [{"id": f"q{i}", "image": name, "input": "Which dynasty?", "original_question": "Which dynasty?",
                "output": output, "kilt_id": "1"} for i, name in enumerate(["ok.jpg", "../../" + OUTSIDE_NAME])]
    (root / "test.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    report = BuildReport()
    assert [q.id for q in read_viquae(root, ImageStore(tmp_path / "s"), report)] == ["q0"]
    assert report.skipped[0].record == "q1" and "escapes" in report.skipped[0].reason

    (root / "images" / "oven_00000002.jpg").symlink_to(outside)
    shutil.copyfile(photo, root / "images" / "oven_00000001.jpg")
    questions = [{"data_id": f"d{i}", "image_id": f"oven_0000000{i}", "question": "What?", "answer": ["x"]}
                 for i in (1, 2)]
    (root / "infoseek_val.jsonl").write_text("\n".join(json.dumps(q) for q in questions) + "\n")
    (root / "infoseek_val_withkb.jsonl").write_text(
        "\n".join(json.dumps({"data_id": f"d{i}", "entity_id": "Q1"}) for i in (1, 2)) + "\n")
    report = BuildReport()
    assert [q.data_id for q in read_infoseek(root, ImageStore(tmp_path / "s"), report)] == ["d1"]
    assert report.skipped[0].record == "d2" and "escapes" in report.skipped[0].reason


def test_document_readers_refuse_pages_out(outside, tmp_path):
    from mmlbdata.sources import longdocurl, slidevqa

    folder = longdocurl.doc_dir(tmp_path / "ldu", "4055915")
    folder.mkdir(parents=True)
    shutil.copyfile(outside, folder / "4055915_0.png")
    (folder / "4055915_1.png").symlink_to(outside)
    with pytest.raises(ValueError, match="4055915_1.png: page image of document 4055915 leads outside"):
        longdocurl.page_images(tmp_path / "ldu", "4055915")

    deck = tmp_path / "svqa" / "images" / "test" / "deck-a"
    deck.mkdir(parents=True)
    shutil.copyfile(outside, deck / "deck-a-1-1024.jpg")
    (deck / "deck-a-2-1024.jpg").symlink_to(outside)
    urls = [f"https://x/95/deck-a-{k}-1024.jpg" for k in (1, 2)]
    with pytest.raises(ValueError, match="slide 2 of deck 'deck-a' leads outside"):
        slidevqa.deck_pages(tmp_path / "svqa", "test", "deck-a", urls)
    with pytest.raises(ValueError, match="deck_name '../../../..' escapes"):
        slidevqa.deck_pages(tmp_path / "svqa", "test", "../../../..", urls)


def test_mmlongbench_doc_pdf_out_and_trailing_comma(real_data, tmp_path):
    from mmlbdata.sources import mmlongbench_doc

    pdfs = sorted((real_data / "mmlongbench_doc" / "documents").glob("*.pdf"))
    root = tmp_path / "mmld"
    (root / "documents").mkdir(parents=True)
    shutil.copyfile(pdfs[0], root / "documents" / pdfs[0].name)
    (root / "documents" / "elsewhere.pdf").symlink_to(pdfs[1])
    report = BuildReport()
    assert list(mmlongbench_doc.pdf_documents(root / "documents", report)) == [pdfs[0].name]
    assert report.skipped[0].file == str(root / "documents" / "elsewhere.pdf")

    text = (real_data / "mmlongbench_doc" / "samples.json").read_text(encoding="utf-8").rstrip()
    assert text.endswith("]")
    (root / "samples.json").write_text(text[:-1].rstrip() + ",\n]")  # a trailing comma
    with pytest.raises(ValueError, match=r"samples\.json: invalid JSON \(.* at line \d+, column \d+\)") as err:
        list(mmlongbench_doc.read_samples(root))
    assert str(root / "samples.json") in str(err.value)


def test_lvb_video_symlink_out_and_readbench_row_file_out(outside, tmp_path):
    from mmlbdata.sources.lvb import LVBRecordError, release_file
    from mmlbdata.sources.readbench import _files

    (tmp_path / "lvb" / "videos").mkdir(parents=True)
    (tmp_path / "lvb" / "videos" / "a.mp4").symlink_to(outside)
    with pytest.raises(LVBRecordError, match="escapes"):
        release_file(tmp_path / "lvb", "videos", "a.mp4")
    assert release_file(tmp_path / "lvb", "videos", "b.mp4") == tmp_path / "lvb" / "videos" / "b.mp4"

    rows = tmp_path / "gpqa"
    rows.mkdir()
    (rows / "gpqa_diamond.csv").write_text("Question\n")
    (tmp_path / "secret.csv").write_text("Question\n")
    (rows / "gpqa_main.csv").symlink_to(tmp_path / "secret.csv")
    assert [p.name for p in _files(rows, "**/gpqa_*.*")] == ["gpqa_diamond.csv"]


# --------------------------------------------------------------------------- publishing, exports, CLI

@pytest.fixture(scope="module")
def built(coco_mini, tokenizer_path, tmp_path_factory):
    out = tmp_path_factory.mktemp("built")
    result = build_configs(["vh_single_8k"], {"coco": coco_mini}, out, limit=1, store_root=out / "store",
                           tokenizer=tokenizer_path, progress=False)[0]
    assert result.ok, result.error
    return out


def _listing(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def test_push_refuses_repo_ids_that_leave_the_dry_run_folder(built, tmp_path, capsys):
    from mmlbdata.cli import main
    from mmlbdata.dataset.hub import FolderUploader, push_folder
    from mmlbdata.core.paths import UnsafePathError

    dry = tmp_path / "a" / "b" / "dry"
    for repo in ("../../x", "org/../../x", "a/b/c", "/abs/repo"):
        assert main(["push", str(built), "--repo", repo, "--dry-run", str(dry)]) == 1
        err = capsys.readouterr().err
        assert err.startswith(f"error: --repo {repo!r} is not a Hub repo id") and err.count("\n") == 1
    assert _listing(tmp_path) == []
    with pytest.raises(ValueError, match="is not a branch name"):
        push_folder(built, "org/mmlb", revision="../../../x", uploader=FolderUploader(dry))
    for revision in ("../x", "a/../../b", "/main", "v 1"):  # even one that stays inside the folder
        assert main(["push", str(built), "--repo", "org/mmlb", "--revision", revision, "--dry-run", str(dry)]) == 1
        assert capsys.readouterr().err.startswith(f"error: --revision {revision!r} is not a branch name")
    assert not (tmp_path / "a" / "x").exists() and _listing(tmp_path) == []
    with pytest.raises(UnsafePathError, match="escapes"):  # the folder uploader's own guard stays
        FolderUploader(dry).repo_dir("org/mmlb", "../../../x")
    assert main(["push", str(built), "--repo", "org/mmlb", "--dry-run", str(dry)]) == 0
    assert (dry / "org" / "mmlb" / "main" / "manifests" / "vh_single_8k.json").is_file()


def test_failed_real_push_is_one_line_without_the_token(built, monkeypatch, capsys):
    import httpx2
    import huggingface_hub
    from huggingface_hub.errors import HfHubHTTPError

    from mmlbdata.cli import main

    token = "hf_" + "q" * 30

    class RefusingApi:
        def create_repo(self, repo_id, **kwargs):
            request = httpx2.Request("POST", "https://huggingface.co/api/repos/create",
                                     headers={"authorization": f"Bearer {token}"})
            raise HfHubHTTPError(f"401 Client Error: Unauthorized for url: {request.url}\n"
                                 f"Invalid credentials in Authorization header (Bearer {token})",
                                 response=httpx2.Response(401, request=request))

    monkeypatch.setattr(huggingface_hub, "HfApi", RefusingApi)
    assert main(["push", str(built), "--repo", "org/mmlb"]) == 1
    captured = capsys.readouterr()
    assert captured.err.startswith("error: push to org/mmlb failed: HfHubHTTPError: 401 Client Error")
    assert captured.err.count("\n") == 1 and "Traceback" not in captured.err
    assert token not in captured.err + captured.out and "qqqqqq" not in captured.err


def _manifest_with(built: Path, tmp_path: Path, **changes) -> Path:
    copy = tmp_path / "built"
    shutil.copytree(built, copy, ignore=shutil.ignore_patterns("store"))
    path = copy / "manifests" / "vh_single_8k.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))
    return copy


@pytest.mark.parametrize("fmt, changes", [("mmlongbench", {"dataset": "../../../x"}),
                                          ("mmlongbench", {"family": "../../../x"}),
                                          ("lmms-eval", {"family": "a/../../../x"})])
def test_export_never_writes_outside_out(built, tmp_path, capsys, fmt, changes):
    from mmlbdata.cli import main

    folder = _manifest_with(built, tmp_path, **changes)
    out = tmp_path / "deep" / "er" / "out"
    code = main(["export", str(folder), "--format", fmt, "--out", str(out)])
    # refused, or written where the release's own file names put it (the mmlongbench export names
    # files by config, not by the manifest's family): never outside --out
    if code != 0:
        assert code == 1 and "escapes" in capsys.readouterr().err
    written = list((tmp_path / "deep").rglob("*.jsonl")) + list((tmp_path / "deep").rglob("*.yaml"))
    assert all(out in p.parents for p in written)
    assert code != 0 or written
    assert not (tmp_path / "x").exists() and not (tmp_path / "deep" / "x").exists()


def test_exported_image_path_and_config_names_stay_inside(tmp_path):
    from mmlbdata.exports import selected_configs, write_image

    with pytest.raises(ValueError, match="escapes"):
        write_image(tmp_path / "images", b"data", relative="../../x.jpg")
    assert not (tmp_path.parent / "x.jpg").exists()
    with pytest.raises(ValueError, match="not a plain name"):
        selected_configs(tmp_path, ["../x"])


@pytest.mark.parametrize("argv", [["build", "vh_single_8k", "--out", "o"], ["run", "--model", "m", "--data", "d",
                                                                            "--config", "c", "--out", "o"]])
@pytest.mark.parametrize("value, message", [("-1", "must be at least 1, got -1"), ("0", "must be at least 1, got 0"),
                                            ("ten", "expected a whole number >= 1, got 'ten'")])
def test_limit_below_one_is_rejected_by_argparse(argv, value, message, capsys):
    from mmlbdata.cli import main

    with pytest.raises(SystemExit) as exit_code:
        main(argv + ["--limit", value])
    assert exit_code.value.code == 2
    assert f"argument --limit: {message}" in capsys.readouterr().err


def test_limit_one_is_accepted():
    from mmlbdata.cli import make_parser

    assert make_parser().parse_args(["build", "vh_single_8k", "--out", "o", "--limit", "1"]).limit == 1


# --------------------------------------------------------------------------- remote code, task YAML

def _run_args(*extra):
    from mmlbdata.cli import make_parser

    return make_parser().parse_args(["run", "--model", "some/model", "--data", "d", "--config", "c",
                                     "--out", "o", *extra])


@pytest.mark.parametrize("flag, trusted", [((), False), (("--trust-remote-code",), True)])
def test_vllm_trusts_remote_code_only_when_asked(monkeypatch, flag, trusted):
    import sys
    import types

    from mmlbdata.cli.run import make_backend

    calls = {}

    class LLM:
        def __init__(self, model, **kwargs):
            calls.update(kwargs)

    monkeypatch.setitem(sys.modules, "vllm", types.SimpleNamespace(LLM=LLM, SamplingParams=dict))
    make_backend(_run_args("--backend", "vllm", *flag))
    assert calls["trust_remote_code"] is trusted


@pytest.mark.parametrize("flag, trusted", [((), False), (("--trust-remote-code",), True)])
def test_hf_trusts_remote_code_only_when_asked(monkeypatch, flag, trusted):
    import sys
    import types

    from mmlbdata.cli.run import make_backend

    calls = []

    def recording(kind, result):
        def from_pretrained(name, **kwargs):
            calls.append((kind, kwargs.get("trust_remote_code")))
            return result
        return types.SimpleNamespace(from_pretrained=from_pretrained)

    model = types.SimpleNamespace()
    model.to = lambda device: model
    model.eval = lambda: model
    tokenizer = types.SimpleNamespace(pad_token="<pad>", eos_token="</s>")
    fake = types.SimpleNamespace(AutoProcessor=recording("processor", types.SimpleNamespace(tokenizer=tokenizer)),
                                 AutoModelForImageTextToText=recording("model", model))
    monkeypatch.setitem(sys.modules, "transformers", fake)
    make_backend(_run_args("--backend", "hf", "--device", "cpu", *flag))
    assert calls == [("processor", trusted), ("model", trusted)]


def test_task_yaml_include_and_function_stay_in_the_task_folder(tmp_path):
    from tests.lmms_eval_tasks import load_task_yaml

    tasks = tmp_path / "tasks"
    tasks.mkdir()
    marker = tmp_path / "ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('x')\ndef hook(doc):\n    return doc\n")
    (tmp_path / "outside.yaml").write_text("dataset_path: /somewhere\n")
    (tasks / "utils.py").write_text("def hook(doc):\n    return doc\n")
    (tasks / "base.yaml").write_text("dataset_path: org/mmlb\ndoc_to_text: !function utils.hook\n")
    (tasks / "ok.yaml").write_text("task: ok\ninclude: base.yaml\n")
    assert load_task_yaml(tasks / "ok.yaml")["doc_to_text"]("d") == "d"
    (tasks / "fn.yaml").write_text("task: fn\ndoc_to_text: !function ../evil.hook\n")
    (tasks / "inc.yaml").write_text("task: inc\ninclude: ../outside.yaml\n")
    (tasks / "abs.yaml").write_text(f"task: abs\ninclude: {tmp_path / 'outside.yaml'}\n")
    for name in ("fn.yaml", "inc.yaml", "abs.yaml"):
        with pytest.raises(ValueError, match="escapes"):
            load_task_yaml(tasks / name)
    assert not marker.exists()
    (tasks / "a.yaml").write_text("task: a\ninclude: b.yaml\n")
    (tasks / "b.yaml").write_text("task: b\ninclude: a.yaml\n")
    with pytest.raises(ValueError, match="include cycle"):
        load_task_yaml(tasks / "a.yaml")


def test_pdf_page_that_would_render_a_bomb_is_refused_before_rendering(tmp_path, monkeypatch):
    import pymupdf

    from mmlbdata.media.pdf import PdfError, page_pixel_sizes, render_page_png

    monkeypatch.delenv("MMLB_MAX_IMAGE_PIXELS", raising=False)
    doc = pymupdf.open()
    doc.new_page(width=612, height=792)
    doc.new_page(width=14400, height=14400)  # 200 x 200 inches, PDF's largest page
    doc.save(tmp_path / "big.pdf")
    assert page_pixel_sizes(tmp_path / "big.pdf", 144)[1] == (28800, 28800)
    assert render_page_png(tmp_path / "big.pdf", 0, 144).startswith(b"\x89PNG")
    with pytest.raises(PdfError, match=r"page index 1\): image declares 28800x28800 .* pixel limit"):
        render_page_png(tmp_path / "big.pdf", 1, 144)


def test_multi_lexsum_document_ids_naming_other_folders_are_skipped(tmp_path):
    from mmlbdata.core.paths import UnsafePathError
    from mmlbdata.sources import multi_lexsum
    from tests.summ_fixtures import make_lexsum_release

    base = make_lexsum_release(tmp_path / "lexsum", {"A-1": ["A-1-0001"], "B-2": ["../../../outside"]},
                               pages={"A-1-0001": 3})  # no PDF written for the hostile id
    skipped = []
    cases = list(multi_lexsum.iter_cases(base, on_skip=lambda *a: skipped.append(a)))
    assert [c.case_id for c in cases] == ["A-1"]
    assert skipped == [(str(base / "test.json"), "B-2",
                        "document ids that are not plain file names: ['../../../outside']")]
    with pytest.raises(UnsafePathError, match="not a plain file name"):
        multi_lexsum.pdf_path(tmp_path / "lexsum" / "pdfs", multi_lexsum.SourceDoc("../../x", "", "", ""))


def test_lvb_build_skips_a_row_whose_subtitles_lead_out(real_data, counter, tmp_path):
    from mmlb_builders.lvb import LongVideoBench
    from tests.test_lvb import write_release

    root = write_release(tmp_path / "LongVideoBench", real_data)
    secret = tmp_path / "secret.json"  # valid subtitles: only the root check keeps them out
    secret.write_text((root / "subtitles" / "friday_en.json").read_text().replace("Hildy!", "secret line"))
    (root / "subtitles" / "friday_lines.json").unlink()
    (root / "subtitles" / "friday_lines.json").symlink_to(secret)
    report = BuildReport()
    builder = LongVideoBench("lvb_val_subs", sources={"lvb": root}, store=ImageStore(tmp_path / "store"),
                             counter=counter, report=report)
    rows = list(builder.generate())
    assert [r["id"] for r in rows] == ["friday_0", "friday_2"]
    assert all("secret line" not in r["prompt"] for r in rows)
    assert [(s.file, s.record) for s in report.skipped] == [(str(root / "lvb_val.json"), "friday_1")]
    assert "subtitles file 'friday_lines.json' escapes" in report.skipped[0].reason
