"""`mmlb fetch` over the registry: every key's plan against a loopback HTTP server (URL files, via
``--mirror``) and a loopback Hub endpoint (``HF_ENDPOINT``), safe extraction, resume, and a
fetched COCO folder that builds ``vh_single_8k``. Nothing reaches the network."""
from __future__ import annotations

import hashlib
import io
import json
import tarfile
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from loopback_http import LoopbackServer
from loopback_hub import LoopbackHub
from mmlbdata.dataset.registry import families_for_configs
from mmlbdata.sources import fetch as F
from mmlbdata.sources.archives import ArchiveError, extract_archive
from mmlbdata.cli import main
from summ_fixtures import make_lexsum_release


@pytest.fixture(autouse=True)
def hub_online(monkeypatch):
    """The test session runs with HF_HUB_OFFLINE=1; the loopback Hub is local, so allow it."""
    import huggingface_hub.constants as constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("MMLB_FETCH_MIRROR", raising=False)


# --------------------------------------------------------------------------- archive builders

def zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return buf.getvalue()


def tar_bytes(members: dict[str, bytes], mode: str = "w:gz", links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=mode) as tf:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tf.addfile(info)
    return buf.getvalue()


# --------------------------------------------------------------------------- safe extraction

def test_zip_member_climbing_out_is_refused_and_nothing_placed(tmp_path):
    archive = tmp_path / "evil.zip"
    archive.write_bytes(zip_bytes({"ok/a.txt": b"a", "../../x": b"pwned"}))
    dest = tmp_path / "deep" / "dest"
    with pytest.raises(ArchiveError, match=r"unsafe member '\.\./\.\./x'"):
        extract_archive(archive, dest)
    assert not (tmp_path / "x").exists() and not (dest / "ok" / "a.txt").exists()
    assert list(dest.parent.iterdir()) == [dest]  # no staging left behind


def test_tar_member_climbing_out_and_link_out_are_refused(tmp_path):
    for name, archive_bytes in {"dotdot.tar.gz": tar_bytes({"a.txt": b"a", "../../x": b"p"}),
                                "link.tar.gz": tar_bytes({"a.txt": b"a"}, links={"evil": "../../etc/passwd"})}.items():
        archive = tmp_path / name
        archive.write_bytes(archive_bytes)
        dest = tmp_path / f"dest_{name}"
        with pytest.raises(ArchiveError, match="unsafe member"):
            extract_archive(archive, dest)
        assert not any(dest.iterdir()) and not (tmp_path / "x").exists()


def test_truncated_archives_are_refused_and_nothing_placed(tmp_path):
    members = {f"val2017/{i:012d}.jpg": bytes(range(256)) * 64 for i in range(5)}
    for name, data in {"t.zip": zip_bytes(members), "t.tar.gz": tar_bytes(members)}.items():
        archive = tmp_path / name
        archive.write_bytes(data[: len(data) * 2 // 3])
        dest = tmp_path / f"dest_{name}"
        with pytest.raises(ArchiveError, match="corrupt or truncated"):
            extract_archive(archive, dest)
        assert not any(dest.iterdir())


def test_members_strip_and_split_tar(tmp_path):
    archive = tmp_path / "a.zip"
    archive.write_bytes(zip_bytes({"annotations/instances_val2017.json": b"{}",
                                   "annotations/captions_val2017.json": b"{}"}))
    assert extract_archive(archive, tmp_path / "d", members=["annotations/instances_val2017.json"]) == [
        "annotations/instances_val2017.json"]
    assert not (tmp_path / "d" / "annotations" / "captions_val2017.json").exists()
    whole = tar_bytes({"top/videos/a.mp4": b"v" * 5000, "top/videos/b.mp4": b"w" * 5000}, mode="w")
    parts = [tmp_path / "videos.tar.part.aa", tmp_path / "videos.tar.part.ab"]
    parts[0].write_bytes(whole[:3000])
    parts[1].write_bytes(whole[3000:])
    placed = extract_archive(parts, tmp_path / "lvb", strip="top/")
    assert placed == ["videos/a.mp4", "videos/b.mp4"]
    assert (tmp_path / "lvb" / "videos" / "b.mp4").read_bytes() == b"w" * 5000


def test_hard_links_are_renamed_by_strip_or_refused(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in {"top/a.txt": b"A", "other/c.txt": b"C"}.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
        for name, target in {"top/b.txt": "top/a.txt", "top/d.txt": "other/c.txt"}.items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.LNKTYPE, target
            tf.addfile(info)
    archive = tmp_path / "links.tar"
    archive.write_bytes(buf.getvalue())
    placed = extract_archive(archive, tmp_path / "ok", strip="top/", members=["top/a.txt", "top/b.txt"])
    assert placed == ["a.txt", "b.txt"] and (tmp_path / "ok" / "b.txt").read_bytes() == b"A"
    with pytest.raises(ArchiveError, match="hard link 'top/d.txt' points at 'other/c.txt'"):
        extract_archive(archive, tmp_path / "refused", strip="top/")
    assert not any((tmp_path / "refused").iterdir())


# --------------------------------------------------------------------------- the registry

def test_registry_covers_every_source_key_with_origin_and_licence():
    from mmlbdata.dataset.registry import families, sources_by_key

    from mmlbdata.evaluation.docqa_judge import SOURCE_KEY as JUDGE_PROMPTS  # read by mmlb eval, no builder
    from mmlbdata.evaluation.memlens_judge import SOURCE_KEY as MEMLENS_PROMPTS  # the same

    registry = F.load_registry()
    assert set(sources_by_key()) == set(registry) - {JUDGE_PROMPTS, MEMLENS_PROMPTS}
    users = {key: {family for family, _ in fam} for key, fam in sources_by_key().items()}
    users.setdefault("mmlb_release", set())
    users.setdefault(JUDGE_PROMPTS, set())
    users.setdefault(MEMLENS_PROMPTS, set())
    for key, entry in registry.items():
        assert entry.licence and entry.origin and entry.size and entry.verified, key
        for part in entry.parts:
            assert set(part.families) <= users[key], part.label  # `for` names real users of the key
            assert not part.hub or (part.hub.revision and part.hub.patterns), part.label
    assert set().union(*users.values()) <= set(families())


def test_selection_takes_only_what_families_need():
    registry = F.load_registry()
    labels = [p.label for p in F.select_parts(registry, families=families_for_configs(["mmneedle_n1_k1_8k"]))]
    assert labels == ["coco:annotations2014", "coco:val2014"]  # val2014 only for MMNeedle
    labels = [p.label for p in F.select_parts(registry, families=families_for_configs(["vh_single_8k"]))]
    assert labels == ["coco:annotations2017", "coco:val2017"]  # train2017 is optional
    assert [p.label for p in F.select_parts(registry, ["coco:train2017"])] == ["coco:train2017"]
    with pytest.raises(KeyError, match="no part 'nope'"):
        F.select_parts(registry, ["coco:nope"])
    with pytest.raises(KeyError, match="unknown source key"):
        F.select_parts(registry, ["cocoa"])


# --------------------------------------------------------------------------- every key's plan

REAL_LAYOUT = {  # archive members in each release's real layout (small stand-in bytes)
    "coco:annotations2017": {"annotations/instances_val2017.json": b"{}", "annotations/captions_val2017.json": b"{}"},
    "coco:val2017": {"val2017/000000000139.jpg": b"jpg"},
    "coco:annotations2014": {"annotations/captions_val2014.json": b"{}", "annotations/instances_val2014.json": b"{}"},
    "coco:val2014": {"val2014/COCO_val2014_000000000042.jpg": b"jpg"},
    "coco:train2017": {"train2017/000000000009.jpg": b"jpg"},
    "mmniah:images": {"images/obelics/a.jpg": b"jpg"},
    "longdocurl:pages": {"png_files/pdf_pngs/4000-4999/4000/4000000_0.png": b"png", "png_files/x.txt": b""},
    "longdocurl:pages2": {"pdf_pngs/4000-4999/4001/4001000_0.png": b"png"},
    "lvb:subtitles": {"subtitles/abc_en.json": b"[]"},
    "lvb:videos": {"videos/abc.mp4": b"v" * 4000},
    "viquae:images": {"images/512px-Q.jpg": b"jpg"},
    "inat2021:train_mini_json": {"train_mini.json": b"{}"},
    "inat2021:val_json": {"val.json": b"{}"},
    "inat2021:train_mini": {"train_mini/00000_Animalia/a.jpg": b"jpg"},
    "inat2021:val": {"val/00000_Animalia/b.jpg": b"jpg"},
    "longbench:data": {"data/narrativeqa.jsonl": b"{}\n"},
    "mmlb_release:data": {"mmlb_data/vrag/infoseek_K8.jsonl": b"{}\n"},
    "mmlb_release:images": {"mmlb_image/vh/a.jpg": b"jpg", "mmlb_image/icl/b.jpg": b"jpg"},
    # the extended release's per-length archives (inner layout UNVERIFIED: a top-level mmlb_image/)
    **{f"mmlb_release_tsv:images_{k}": {f"mmlb_image/{k.upper()}/NIAH/a.jpg": b"jpg"}
       for k in ("32k", "128k", "256k", "512k")},
    "mmneedle_release:metadata": {"metadata_stitched/annotations_10_2_2.json": b"[]",
                                  "metadata_stitched/2_annotations_10_2_2.json": b"[]"},
    "mmneedle_release:images": {"images_stitched/2_2/0.jpg": b"jpg"},
}


def _concrete(pattern: str) -> str:
    return pattern.replace("**/", "VHs_large/").replace("*", "fixture")


def _archive(part, members: dict[str, bytes]) -> bytes:
    return zip_bytes(members) if part.extract == "zip" else tar_bytes(members, mode="w" if part.split else "w:gz")


def _url_fixture(part) -> bytes:
    if not part.extract:
        return f"fixture {part.label}\n".encode()
    return _archive(part, REAL_LAYOUT[part.label])


def _hub_fixture(part) -> dict[str, bytes]:
    names = [_concrete(p) for p in part.hub.patterns]
    if not part.extract:
        return {name: f"fixture {name}\n".encode() for name in names}
    layout = REAL_LAYOUT[part.label]
    if part.split:  # one tar in two pieces: videos.tar.part.aa + .ab
        data = _archive(part, layout)
        half = len(data) // 2
        return {names[0].replace("fixture", "aa"): data[:half], names[0].replace("fixture", "ab"): data[half:]}
    pattern = part.hub.patterns[0]
    if "*" not in pattern:
        return {pattern: _archive(part, layout)}
    # several archives match the pattern: one per member, each extracted on its own
    return {pattern.replace("[0-9]", str(i + 1)).replace("*", f"x{i}"): _archive(part, {name: data})
            for i, (name, data) in enumerate(layout.items())}


def serve_registry(registry, lexsum_src: Path):
    """Loopback contents for every part, and the registry with checksums of those contents."""
    url_files, repos, patched = {}, {}, {}
    for key, entry in registry.items():
        parts = []
        for part in entry.parts:
            if part.url:
                data = _url_fixture(part)
                url_files["/" + part.url.split("://", 1)[1]] = data
                part = replace(part, size=len(data), md5=None, sha256=hashlib.sha256(data).hexdigest())
            elif part.hub:
                files = repos.setdefault(part.hub.repo, {"unrelated/not-needed.bin": b"x"})
                files.update(_hub_fixture(part))
            parts.append(part)
        patched[key] = replace(entry, parts=tuple(parts))
    lexsum = lexsum_src / "releases" / "v20230518"
    repos["allenai/multi_lexsum"].update({f"releases/v20230518/{n}": (lexsum / n).read_bytes()
                                          for n in ("test.json", "sources.json")})
    url_files["/clearinghouse.net/doc/A-1-0001"] = (lexsum_src / "pdfs" / "A-1-0001.pdf").read_bytes()
    # MemLens: a record naming an image by URL (the url_images follow-up step fetches it)
    turn = {"role": "user", "content": "<image>", "images": [MEMLENS_URL]}
    record = {"question_id": "q0", "question_type": "information_extraction", "question": "?", "answer": "a",
              "haystack_sessions": [[turn]]}
    repos["xiyuRenBill/MEMLENS"]["dataset_32k.json"] = json.dumps([record]).encode()
    url_files["/" + MEMLENS_URL.split("://", 1)[1]] = b"\xff\xd8\xff" + b"jpeg" * 10
    return url_files, repos, patched


MEMLENS_URL = "https://example.org/memlens/photo.jpg"


def test_every_key_fetched_from_loopback_servers_then_kept(tmp_path):
    make_lexsum_release(tmp_path / "lexsum_src", {"A-1": ["A-1-0001"]}, extra_sources=0)
    url_files, repos, registry = serve_registry(F.load_registry(), tmp_path / "lexsum_src")
    dest = tmp_path / "sources"
    parts = F.select_parts(registry, list(registry))
    with LoopbackServer(url_files) as http, LoopbackHub(repos) as hub:
        options = F.FetchOptions(endpoint=hub.endpoint, mirror=http.url("/"), allow_large=True,
                                 progress=False, retries=0)
        report = F.fetch(registry, parts, dest, options)
        status = {o.label: o.status for o in report.outcomes}
        assert "unrelated/not-needed.bin" not in {p for _, p in hub.requests}  # allow_patterns honoured
        again = F.fetch(registry, parts, dest, options)
    manual = {p.label for p in parts if p.manual}
    # GovReport's PDFs need the release the user places by hand: said so, nothing else fails
    assert {k for k, v in status.items() if v == "failed"} == {"govreport:pdfs"}
    assert "place it first" in {o.label: o.detail for o in report.outcomes}["govreport:pdfs"]
    assert {k for k, v in status.items() if v == "manual"} == manual
    assert all(v == "fetched" for k, v in status.items() if k not in manual | {"govreport:pdfs"})
    assert {o.label: o.status for o in again.outcomes if o.status not in ("kept", "manual")} == {
        "govreport:pdfs": "failed"}
    # the layouts the readers expect
    assert (dest / "coco" / "annotations" / "instances_val2017.json").is_file()
    assert (dest / "coco" / "annotations" / "captions_val2014.json").is_file()
    assert not (dest / "coco" / "annotations" / "captions_val2017.json").exists()  # only needed members
    assert (dest / "coco" / "val2017" / "000000000139.jpg").is_file()
    assert (dest / "mmniah" / "annotations" / "fixture.jsonl").is_file()  # mm_niah_val/ stripped
    assert (dest / "mmniah" / "images" / "obelics" / "a.jpg").is_file()
    assert (dest / "longdocurl" / "LongDocURL.jsonl").is_file()  # renamed for the reader
    assert (dest / "longdocurl" / "pdf_pngs" / "4000-4999" / "4000" / "4000000_0.png").is_file()  # anchored
    assert (dest / "longdocurl" / "pdf_pngs" / "4000-4999" / "4001" / "4001000_0.png").is_file()
    assert (dest / "lvb" / "videos" / "abc.mp4").read_bytes() == b"v" * 4000  # split tar joined
    assert (dest / "vhs" / "single_needle" / "VHs_large" / "fixture.json").is_file()
    assert (dest / "mmlb_release" / "mmlb_data" / "vrag" / "infoseek_K8.jsonl").is_file()
    assert (dest / "mmlb_release" / "mmlb_image" / "vh" / "a.jpg").is_file()  # two archives, each extracted
    assert (dest / "mmlb_release" / "mmlb_image" / "icl" / "b.jpg").is_file()
    assert (dest / "slidevqa" / "annotations" / "qa" / "test.jsonl").is_file()
    assert (dest / "multi_lexsum" / "pdfs" / "A-1-0001.pdf").is_file()  # follow-up step, mirrored URL
    from mmlbdata.sources.memlens import url_image_name

    assert (dest / "memlens" / "url_images" / url_image_name(MEMLENS_URL)).read_bytes()[:3] == b"\xff\xd8\xff"
    paths = F.source_paths(registry, dest, ["kilt", "coco"])
    assert paths["kilt"].is_file() and paths["coco"] == dest / "coco"
    last = json.loads((dest / F.STATE_DIR / "last-report.json").read_text())
    assert {o["label"]: o["status"] for o in last} == {o.label: o.status for o in again.outcomes}
    record = json.loads((dest / F.STATE_DIR / "vhs.questions.json").read_text())
    assert record["revision"] and record["origin"].startswith("hf://datasets/tsunghanwu/visual_haystacks")


def _coco_registry(tmp_path, **changes):
    registry = F.load_registry()
    entry = registry["coco"]
    return {**registry, "coco": replace(entry, parts=tuple(replace(p, **changes.get(p.name, {}))
                                                           for p in entry.parts))}


def test_bad_checksum_is_refused_and_nothing_placed(tmp_path):
    data = zip_bytes(REAL_LAYOUT["coco:annotations2017"])
    registry = _coco_registry(tmp_path, annotations2017={"size": None, "md5": None, "sha256": "0" * 64})
    parts = F.select_parts(registry, ["coco:annotations2017"])
    with LoopbackServer({"/images.cocodataset.org/annotations/annotations_trainval2017.zip": data}) as http:
        report = F.fetch(registry, parts, tmp_path / "s", F.FetchOptions(mirror=http.url("/"), progress=False,
                                                                          retries=0))
    outcome = report.outcomes[0]
    assert outcome.status == "failed" and "sha256 mismatch" in outcome.detail
    assert not (tmp_path / "s" / "coco").exists() and not report.ok
    assert not list((tmp_path / "s").rglob("*.zip"))  # the corrupt download is not kept either


def test_truncated_and_evil_archives_fail_cleanly_through_fetch(tmp_path):
    good = zip_bytes(REAL_LAYOUT["coco:annotations2017"])
    evil = zip_bytes({"annotations/instances_val2017.json": b"{}", "../../x": b"p"})
    for name, data in {"truncated": good[: len(good) // 2], "evil": evil}.items():
        registry = _coco_registry(tmp_path, annotations2017={"size": None, "md5": None, "sha256": None})
        parts = F.select_parts(registry, ["coco:annotations2017"])
        dest = tmp_path / name
        with LoopbackServer({"/images.cocodataset.org/annotations/annotations_trainval2017.zip": data}) as http:
            report = F.fetch(registry, parts, dest, F.FetchOptions(mirror=http.url("/"), progress=False, retries=0))
        detail = report.outcomes[0].detail
        assert report.outcomes[0].status == "failed"
        assert ("corrupt or truncated" in detail) if name == "truncated" else ("'../../x'" in detail)
        assert not list((dest / "coco").rglob("*")) and not (tmp_path / "x").exists()
        assert not (dest / F.STATE_DIR / "coco.annotations2017.json").exists()


def test_no_room_is_said_before_downloading_or_extracting(tmp_path, monkeypatch):
    import shutil
    from collections import namedtuple

    registry = F.load_registry()
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(shutil, "disk_usage", lambda path: usage(10**9, 10**9 - 10**6, 10**6))
    with LoopbackServer({}) as http:
        report = F.fetch(registry, F.select_parts(registry, ["coco:val2017"]), tmp_path,
                         F.FetchOptions(mirror=http.url("/"), progress=False))
        assert http.requests == []
    assert report.outcomes[0].status == "failed" and "needs 0.8 GB more, 0.0 GB free" in report.outcomes[0].detail
    archive = tmp_path / "big.zip"
    archive.write_bytes(zip_bytes({"a.bin": b"0" * 2_000_000}))
    with pytest.raises(ArchiveError, match="needs 0.0 GB to extract"):
        extract_archive(archive, tmp_path / "d")
    assert not (tmp_path / "d" / "a.bin").exists()


def test_gated_repo_says_what_to_do_and_the_token_opens_it(tmp_path, monkeypatch, capsys):
    registry = F.load_registry()
    with LoopbackHub({"Idavidrein/gpqa": {"gpqa_diamond.csv": b"Question\n"}}, gated={"Idavidrein/gpqa"}) as hub:
        monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)  # the endpoint comes from the environment
        report = F.fetch(registry, F.select_parts(registry, ["gpqa"]), tmp_path, F.FetchOptions(progress=False))
        outcome = report.outcomes[0]
        assert outcome.status == "failed" and "gated" in outcome.detail and "accept its conditions" in outcome.detail
        assert main(["fetch", "gpqa", "--dest", str(tmp_path), "--token", hub.token, "--no-progress"]) == 0
    assert "1 fetched" in capsys.readouterr().out
    assert (tmp_path / "gpqa" / "gpqa_diamond.csv").read_bytes() == b"Question\n"


def test_large_sources_need_allow_large(tmp_path):
    registry = F.load_registry()
    report = F.fetch(registry, F.select_parts(registry, ["kilt"]), tmp_path, F.FetchOptions(progress=False))
    assert [o.status for o in report.outcomes] == ["skipped"] and "--allow-large" in report.outcomes[0].detail
    assert report.keys_ready() == set()


def test_large_part_placed_earlier_is_kept_without_allow_large(tmp_path, capsys):
    registry = F.load_registry()
    entry = registry["kilt"]
    registry = {**registry, "kilt": replace(entry, parts=tuple(replace(p, size=None, sha256=None, md5=None)
                                                               for p in entry.parts))}
    parts = F.select_parts(registry, ["kilt"])
    with LoopbackServer({"/dl.fbaipublicfiles.com/KILT/kilt_knowledgesource.json": b'{"id": 1}\n'}) as http:
        first = F.fetch(registry, parts, tmp_path, F.FetchOptions(mirror=http.url("/"), allow_large=True,
                                                                  progress=False, retries=0))
    assert [o.status for o in first.outcomes] == ["fetched"]
    again = F.fetch(registry, parts, tmp_path, F.FetchOptions(progress=False))
    assert [o.status for o in again.outcomes] == ["kept"] and again.keys_ready() == {"kilt"}
    assert F.describe_plan(registry, parts, tmp_path).startswith("kept ")


def test_follow_up_on_a_malformed_release_fails_the_part_and_the_report_is_written(tmp_path, capsys):
    registry = F.load_registry()
    (tmp_path / "govreport" / "gov-report" / "gao").mkdir(parents=True)  # no split_ids/gao_test.ids
    report = F.fetch(registry, F.select_parts(registry, ["govreport:pdfs"]), tmp_path, F.FetchOptions(progress=False))
    outcome = report.outcomes[0]
    assert outcome.status == "failed" and "govreport_pdfs" in outcome.detail and "split file" in outcome.detail
    last = json.loads((tmp_path / F.STATE_DIR / "last-report.json").read_text())
    assert [o["status"] for o in last] == ["failed"]
    assert main(["fetch", f"govreport={tmp_path / 'govreport'}", "--no-progress"]) == 1
    assert "split file" in capsys.readouterr().err


def test_plain_files_are_named_by_the_archive_rules(tmp_path):
    base = tmp_path / "staging"
    for name in ("mm_niah_val/annotations/a.jsonl", "README.md"):
        (base / name).parent.mkdir(parents=True, exist_ok=True)
        (base / name).write_text(name)
    part = F.Part(key="k", name="p", hub=F.HubFiles("r"), strip="mm_niah_val/")
    placed = F._place_plain(tmp_path / "s", part, sorted(base.rglob("*.*")), base)
    assert placed == ["annotations/a.jsonl"]  # as for an archive member: what strip leaves out is not placed
    assert not (tmp_path / "s" / "k" / "README.md").exists()
    with pytest.raises(F.PartError, match="no downloaded file"):
        F._place_plain(tmp_path / "s", replace(part, strip="other/"), sorted(base.rglob("*.*")), base)


# --------------------------------------------------------------------------- the command

def test_cli_takes_the_mirror_from_the_environment(tmp_path, monkeypatch, capsys):
    with LoopbackServer({"/dl.fbaipublicfiles.com/KILT/kilt_knowledgesource.json": b'{"id": 1}\n'}) as http:
        monkeypatch.setenv("MMLB_FETCH_MIRROR", http.url("/"))
        assert main(["fetch", "kilt", "--allow-large", "--dest", str(tmp_path), "--no-progress", "--retries", "0"]) == 0
    assert "1 fetched" in capsys.readouterr().out
    assert (tmp_path / "kilt" / "kilt_knowledgesource.json").read_bytes() == b'{"id": 1}\n'


KILT = "/dl.fbaipublicfiles.com/KILT/kilt_knowledgesource.json"


def test_an_empty_download_is_refused_not_recorded_and_retried(tmp_path, capsys):
    """Issue #27 case 5: a mirror serving a 0-byte kilt_knowledgesource.json (the registry lists no
    size for it) gave rc=0, "1 fetched" and a 0-byte file placed."""
    args = ["fetch", "kilt", "--allow-large", "--dest", str(tmp_path), "--no-progress", "--retries", "0"]
    with LoopbackServer({KILT: b""}) as http:
        assert main([*args, "--mirror", http.url("/")]) == 1
    out = capsys.readouterr()
    assert "FAILED   kilt:knowledge_source: kilt_knowledgesource.json: empty download (0 bytes)" in out.out + out.err
    assert not (tmp_path / "kilt").exists() and not (tmp_path / F.STATE_DIR / "kilt.knowledge_source.json").exists()
    with LoopbackServer({KILT: b'{"id": 1}\n'}) as http:  # the rerun tries again
        assert main([*args, "--mirror", http.url("/")]) == 0
    assert "1 fetched" in capsys.readouterr().out
    assert (tmp_path / "kilt" / "kilt_knowledgesource.json").read_bytes() == b'{"id": 1}\n'


def test_an_empty_file_placed_by_an_earlier_run_is_fetched_again(tmp_path):
    registry = F.load_registry()
    parts = F.select_parts(registry, ["kilt"])
    (tmp_path / "kilt").mkdir()
    (tmp_path / "kilt" / "kilt_knowledgesource.json").write_bytes(b"")
    F._write_record(tmp_path, parts[0], ["kilt_knowledgesource.json"], None)  # as a run before #27 left it
    assert F.describe_plan(registry, parts, tmp_path, F.FetchOptions(allow_large=True)).startswith("fetch ")


def test_a_download_below_its_format_floor_or_declared_size_is_refused(tmp_path):
    from mmlbdata.sources.download import plausible_floor

    assert [plausible_floor(n) for n in ("a.zip", "b.tar.gz", "c.tar", "d.json", "e.md", "f.tar.part.aa")] == [
        22, 18, 1, 2, 1, 1]
    part = F.Part(key="coco", name="annotations2017", url="http://images.cocodataset.org/annotations/x.zip",
                  extract="zip")
    entry = F.load_registry()["coco"]
    with LoopbackServer({"/images.cocodataset.org/annotations/x.zip": b"PK\x05\x06"}) as http:
        options = F.FetchOptions(mirror=http.url("/"), progress=False, retries=0)
        outcome = F.fetch_part(tmp_path, part, entry, options)
        assert outcome.status == "failed" and "x.zip: 4 bytes, less than any .zip file can have (22)" in outcome.detail
        outcome = F.fetch_part(tmp_path, replace(part, size=10), entry, options)  # the registry's size
        assert outcome.status == "failed" and "expected 10, got 4" in outcome.detail
    assert not (tmp_path / F.STATE_DIR / "coco.annotations2017.json").exists()


def test_an_empty_hub_file_is_refused_and_removed_from_staging(tmp_path):
    registry = F.load_registry()
    parts = F.select_parts(registry, ["gpqa"])
    with LoopbackHub({"Idavidrein/gpqa": {"gpqa_diamond.csv": b""}}) as hub:
        report = F.fetch(registry, parts, tmp_path, F.FetchOptions(endpoint=hub.endpoint, progress=False))
    outcome = report.outcomes[0]
    assert outcome.status == "failed" and "gpqa_diamond.csv: empty download (0 bytes)" in outcome.detail
    assert not list((tmp_path / F.STATE_DIR / "downloads").rglob("gpqa_diamond.csv"))
    assert not (tmp_path / "gpqa").exists() and report.keys_ready() == set()


def test_cli_list_dry_run_and_errors(tmp_path, capsys):
    assert main(["fetch", "--list"]) == 0
    listed = capsys.readouterr().out
    assert all(key in listed for key in F.load_registry()) and "licence:" in listed
    with LoopbackHub({}) as hub:
        code = main(["fetch", "--benchmark", "mmneedle", "--dest", str(tmp_path / "s"), "--dry-run",
                     "--endpoint", hub.endpoint])
        assert code == 0 and hub.requests == []
    plan = capsys.readouterr().out
    assert "coco:val2014" in plan and "val2017" not in plan and not (tmp_path / "s" / "coco").exists()
    assert main(["fetch", "cocoa", "--dest", str(tmp_path)]) == 2
    assert "unknown source key 'cocoa'" in capsys.readouterr().err
    assert main(["fetch", f"coco={tmp_path}"]) == 2  # KEY=PATH is only the PDFs of a summary release
    assert capsys.readouterr().err.startswith("error: KEY=PATH fetches the PDFs of govreport or multi_lexsum")
    assert main(["fetch", "coco"]) == 2
    assert main(["fetch", "--benchmark", "nope", "--dest", str(tmp_path)]) == 2
    assert "unknown benchmark 'nope'" in capsys.readouterr().err


def test_cli_plan_names_the_destination_absolutely(tmp_path, capsys, monkeypatch):
    """A relative --dest is printed absolute (#18: pasteable from anywhere), and nothing is written."""
    monkeypatch.chdir(tmp_path)
    assert main(["fetch", "--benchmark", "mmneedle", "--dest", "srcs", "--dry-run"]) == 0
    targets = [line.rsplit("-> ", 1)[1] for line in capsys.readouterr().out.splitlines() if "-> " in line]
    assert targets and all(t == str(tmp_path / "srcs" / "coco") for t in targets)
    assert not (tmp_path / "srcs").exists()


def test_plan_total_never_shows_unknown_sizes_as_zero(tmp_path, capsys):
    """The plan's last line: a size where the registry lists one; "0.00 GB" is not a size."""
    assert main(["fetch", "--benchmark", "mmneedle", "--dest", str(tmp_path), "--dry-run"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "total   2 parts; known download size 6.9 GB"
    assert main(["fetch", "--benchmark", "longvideobench", "--dest", str(tmp_path), "--dry-run"]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last.endswith("sizes not listed in the registry (see `mmlb fetch --list`)") and "GB" not in last


def test_build_fetch_builds_vh_single_from_a_fetched_coco_zip(tmp_path, coco_mini, tokenizer_path, monkeypatch,
                                                              capsys):
    """COCO-layout zips made from the real coco_mini sample -> `mmlb build --fetch --limit 2` -> rows."""
    images = sorted((coco_mini / "val2017").glob("*.jpg"))
    ann = zip_bytes({"annotations/instances_val2017.json": (coco_mini / "annotations" / "instances_val2017.json")
                     .read_bytes()})
    val = zip_bytes({f"val2017/{p.name}": p.read_bytes() for p in images})
    unchecked = {"size": None, "md5": None, "sha256": None}
    registry = _coco_registry(tmp_path, annotations2017=unchecked, val2017=unchecked)
    monkeypatch.setattr(F, "load_registry", lambda path=None: registry)
    files = {"/images.cocodataset.org/annotations/annotations_trainval2017.zip": ann,
             "/images.cocodataset.org/zips/val2017.zip": val}
    argv = ["build", "vh_single_8k", "--fetch", "--sources-dir", str(tmp_path / "sources"), "--out",
            str(tmp_path / "out"), "--limit", "2", "--tokenizer", str(tokenizer_path), "--no-progress",
            "--cache-dir", str(tmp_path / "cache")]
    with LoopbackServer(files) as http:
        monkeypatch.setenv("MMLB_FETCH_MIRROR", http.url("/"))
        assert main(argv) == 0
        assert http.count("/images.cocodataset.org/zips/val2017.zip") == 1
        assert main(argv) == 0  # rerun: parts kept, nothing downloaded again
        assert http.count("/images.cocodataset.org/zips/val2017.zip") == 1
    err = capsys.readouterr().err
    assert "2 fetched" in err and "2 kept" in err
    import datasets

    rows = datasets.load_dataset(str(tmp_path / "out"), "vh_single_8k", split="test").remove_columns("images")
    assert rows.num_rows > 0 and all(r["num_tokens"] <= r["length"] == 8192 for r in rows)
    assert len(list((tmp_path / "sources" / "coco" / "val2017").glob("*.jpg"))) == len(images)


def test_interrupted_download_resumes_on_rerun(tmp_path):
    from loopback_http import Behaviour

    data = zip_bytes({"annotations/instances_val2017.json": b"{" + b" " * 200_000 + b"}"})
    registry = _coco_registry(tmp_path, annotations2017={"size": len(data), "md5": None,
                                                         "sha256": hashlib.sha256(data).hexdigest()})
    parts = F.select_parts(registry, ["coco:annotations2017"])
    path = "/images.cocodataset.org/annotations/annotations_trainval2017.zip"
    options = dict(progress=False, retries=0)
    with LoopbackServer({path: data}, behaviour={path: Behaviour(truncate_first=50_000)}) as http:
        first = F.fetch(registry, parts, tmp_path, F.FetchOptions(mirror=http.url("/"), **options))
        assert first.outcomes[0].status == "failed" and not (tmp_path / "coco").exists()
        second = F.fetch(registry, parts, tmp_path, F.FetchOptions(mirror=http.url("/"), **options))
        assert http.ranges(path)[-1] == "bytes=50000-"  # the rest only
    assert second.outcomes[0].status == "fetched"
    assert (tmp_path / "coco" / "annotations" / "instances_val2017.json").stat().st_size == 200_002


def test_fetched_mmlongbench_doc_release_builds(tmp_path, real_data, tokenizer_path, capsys):
    """samples.json over HTTP + PDFs from the (loopback) Hub at the pinned revision -> a build."""
    release = real_data / "mmlongbench_doc"
    registry = F.load_registry()
    samples = next(p for p in registry["mmlongbench_doc"].parts if p.url)
    docs = {f"documents/{p.name}": p.read_bytes() for p in sorted((release / "documents").glob("*.pdf"))}
    sources = tmp_path / "sources"
    with LoopbackServer({"/" + samples.url.split("://", 1)[1]: (release / "samples.json").read_bytes()}) as http, \
            LoopbackHub({"yubo2333/MMLongBench-Doc": {**docs, "data/test.parquet": b"x"}}) as hub:
        code = main(["fetch", "mmlongbench_doc", "--dest", str(sources), "--mirror", http.url("/"),
                     "--endpoint", hub.endpoint, "--no-progress"])
        pinned = [p for m, p in hub.requests if "/revision/" in p]
    assert code == 0 and pinned[0].endswith("d5d84a74544aa145a43d42b2c9a1c01661c92e0e")
    assert sorted(p.name for p in (sources / "mmlongbench_doc" / "documents").iterdir()) == sorted(
        p.name for p in (release / "documents").glob("*.pdf"))
    capsys.readouterr()
    assert main(["build", "mmlongdoc_8k", "--sources-dir", str(sources), "--out", str(tmp_path / "out"),
                 "--limit", "3", "--tokenizer", str(tokenizer_path), "--no-progress",
                 "--cache-dir", str(tmp_path / "cache")]) == 0
    assert "mmlongdoc_8k" in capsys.readouterr().out
    import datasets

    rows = datasets.load_dataset(str(tmp_path / "out"), "mmlongdoc_8k", split="test").remove_columns("images")
    assert rows.num_rows > 0 and all(r["num_tokens"] <= 8192 for r in rows)
