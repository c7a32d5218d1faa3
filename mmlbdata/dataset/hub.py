"""Publishing a built folder to the Hugging Face Hub, resumably.

Default method (``files``): each config is one commit holding its files exactly as built and its
``manifests/<config>.json``; the card (README + stats.png) is the last commit. A files-layout
config's images (``images/<family>/<users>/ab/<sha256>.<ext>``, partitions.py) go first, in commits of at most
:data:`IMAGE_COMMIT_FILES` files, and only those the repo does not hold yet: an image shared by
every config and length is uploaded once for the whole repository. Then one commit holds its
``<config>.metadata.parquet``, so a config is on the Hub only once all its images are. An
embedded config's commit holds its parquet shards. A config whose
manifest on the Hub records the same build fingerprint (SHA-256 of its shards) is skipped, so an
interrupted push is resumed by running it again. Hub commits are atomic: a fingerprint is never
on the Hub without its data.

The README's ``configs``/``dataset_info`` entries are computed with ``datasets``' own
``MetadataConfigs`` / ``DatasetInfosDict`` update logic (what ``Dataset.push_to_hub`` does),
starting from the README already on the Hub, so configs pushed from elsewhere stay listed.

Branch per family or dataset (``branch_per="family"|"dataset"``, ``mmlb push --branch-per``):
each family's (dataset's) configs (metadata, the image partitions they use, manifests) go to
their own branch ``family-<group>`` (``dataset-<name>``) of the same repo, pushed as above
(resumable, unused images removed per branch), and ``main`` holds only the card, whose config
entries name their files as ``hf://datasets/<repo>@<branch>/...``. One name serves every config
while each branch's tree stays within the Hub's file recommendations (``datasets`` accepts data
files of any revision of the repo it loads, but reads a config's images from its metadata file's
revision: a config's files share one branch; ARCHITECTURE.md, "Dataset layout"). The built
folder's own README keeps its relative paths.

Method ``push_to_hub``: ``Dataset.push_to_hub(repo, config_name=..., split="test")`` per config
(re-encodes the rows; images embedded per row). Kept for uploaders that only offer that.

The network sits behind :class:`RepoUploader`; :class:`FolderUploader` is a local folder standing
in for a Hub repo (dry runs and tests). The token comes from the standard HF login / ``HF_TOKEN``
inside ``huggingface_hub``; this module never reads, prints or writes it.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Protocol, Union

from mmlbdata.core.paths import resolve_inside
from mmlbdata.dataset.demo import demo_configs
from mmlbdata.dataset.stats import configs_in, image_paths, is_files_layout, shard_files
from mmlbdata.dataset.writer import (
    HINT_PNG,
    IMAGE_FOLDER_HINT,
    IMAGES_DIR,
    METADATA_SUFFIX,
    SPLIT,
    layout_conflict,
    metadata_filename,
    other_layout,
    read_manifest,
)

README = "README.md"
Payload = Union[Path, bytes]
# The Hub recommends commits of fewer than 100 files through the HTTP API (Hub docs, "Repository
# limitations and recommendations"); image commits are resumable (skipped once on the Hub).
IMAGE_COMMIT_FILES = 100


class Uploader(Protocol):
    """The ``push_to_hub`` route: one call per config."""

    def push_config(self, dataset: Any, repo_id: str, config: str, **kwargs: Any) -> None: ...


class RepoUploader(Protocol):
    """The file route: read what the repo holds, then commit files atomically."""

    def prepare(self, repo_id: str, *, private: bool, revision: Optional[str], fresh_branch: bool = False) -> None:
        """Create the repo (and branch ``revision``) if missing; ``fresh_branch``: a new branch starts
        from the repository's first commit, not main's head (a --branch-per branch must not
        inherit a flat push on main)."""

    def list_files(self, repo_id: str, *, revision: Optional[str]) -> list[str]: ...

    def read_text(self, repo_id: str, path: str, *, revision: Optional[str]) -> Optional[str]: ...

    def commit(self, repo_id: str, *, add: dict[str, Payload], delete: list[str], message: str,
               revision: Optional[str], num_threads: int) -> None: ...


class HubUploader:
    """The real thing (``huggingface_hub.HfApi``; token from the standard login or HF_TOKEN)."""

    def __init__(self) -> None:
        from huggingface_hub import HfApi

        self.api = HfApi()  # token=None: huggingface_hub finds it; we never touch it

    def push_config(self, dataset: Any, repo_id: str, config: str, **kwargs: Any) -> None:
        dataset.push_to_hub(repo_id, config_name=config, split=SPLIT, embed_external_files=True, **kwargs)

    def prepare(self, repo_id: str, *, private: bool, revision: Optional[str], fresh_branch: bool = False) -> None:
        self.api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        if revision:
            start = self._first_commit(repo_id) if fresh_branch and not self._has_branch(repo_id, revision) else None
            self.api.create_branch(repo_id, repo_type="dataset", branch=revision, revision=start, exist_ok=True)

    def _has_branch(self, repo_id: str, branch: str) -> bool:
        refs = self.api.list_repo_refs(repo_id, repo_type="dataset")
        return any(ref.name == branch for ref in refs.branches)

    def _first_commit(self, repo_id: str) -> str:
        """main's first commit (the repository's creation: its .gitattributes only)."""
        return self.api.list_repo_commits(repo_id, repo_type="dataset")[-1].commit_id

    def list_files(self, repo_id: str, *, revision: Optional[str]) -> list[str]:
        return sorted(self.api.list_repo_files(repo_id, repo_type="dataset", revision=revision))

    def read_text(self, repo_id: str, path: str, *, revision: Optional[str]) -> Optional[str]:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.errors import EntryNotFoundError

        try:
            local = hf_hub_download(repo_id, path, repo_type="dataset", revision=revision)
        except EntryNotFoundError:
            return None
        return Path(local).read_text(encoding="utf-8")

    def commit(self, repo_id: str, *, add: dict[str, Payload], delete: list[str], message: str,
               revision: Optional[str], num_threads: int) -> None:
        from huggingface_hub import CommitOperationAdd, CommitOperationDelete

        operations: list = [CommitOperationAdd(path_in_repo=p, path_or_fileobj=str(v) if isinstance(v, Path) else v)
                            for p, v in sorted(add.items())]
        operations += [CommitOperationDelete(path_in_repo=p) for p in sorted(delete)]
        self.api.create_commit(repo_id, operations=operations, commit_message=message, repo_type="dataset",
                               revision=revision, num_threads=num_threads)


class FolderUploader:
    """A local folder standing in for Hub repos: ``root/<repo_id>/<revision>/...``.

    Records every commit (``self.commits``), so a dry run or a test sees exactly what would be sent.
    """

    def __init__(self, root: os.PathLike):
        self.root = Path(root)
        self.commits: list[dict[str, Any]] = []

    def repo_dir(self, repo_id: str, revision: Optional[str] = None) -> Path:
        """``root/<repo_id>/<revision>``, refused (UnsafePathError) if that would leave ``root``."""
        return resolve_inside(self.root, f"{repo_id}/{revision or 'main'}", what="repo id / revision")

    def prepare(self, repo_id: str, *, private: bool, revision: Optional[str], fresh_branch: bool = False) -> None:
        self.repo_dir(repo_id, revision).mkdir(parents=True, exist_ok=True)  # a new branch folder starts empty

    def list_files(self, repo_id: str, *, revision: Optional[str]) -> list[str]:
        base = self.repo_dir(repo_id, revision)
        return sorted(p.relative_to(base).as_posix() for p in base.rglob("*") if p.is_file()) if base.is_dir() else []

    def read_text(self, repo_id: str, path: str, *, revision: Optional[str]) -> Optional[str]:
        target = self.repo_dir(repo_id, revision) / path
        return target.read_text(encoding="utf-8") if target.is_file() else None

    def commit(self, repo_id: str, *, add: dict[str, Payload], delete: list[str], message: str,
               revision: Optional[str], num_threads: int) -> None:
        base = self.repo_dir(repo_id, revision)
        for path in delete:
            resolve_inside(base, path, what="path in repo").unlink(missing_ok=True)
        for path, payload in add.items():
            target = resolve_inside(base, path, what="path in repo")
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(payload, Path):
                shutil.copyfile(payload, target)
            else:
                target.write_bytes(payload)
        self.commits.append({"message": message, "add": sorted(add), "delete": sorted(delete),
                             "revision": revision})


@dataclass
class PushPlan:
    repo_id: str
    configs: list[str] = field(default_factory=list)  # pushed
    skipped: list[str] = field(default_factory=list)  # already on the Hub with the same fingerprint
    files: list[str] = field(default_factory=list)  # paths sent, in order
    readme: str = ""  # the README text sent
    removed: list[str] = field(default_factory=list)  # images deleted from the repo: no config of it uses them
    kept_unused_for: list[str] = field(default_factory=list)  # configs built elsewhere: no image deleted for them
    branches: dict[str, list[str]] = field(default_factory=dict)  # branch -> its configs (branch_per)


def load_config(folder: os.PathLike, config: str):
    """The built config as a ``datasets.Dataset`` (read from its parquet shards, offline; cached
    per location and build, so a moved or copied folder sends its own images)."""
    from mmlbdata.dataset.loading import load_built

    return load_built(folder, config)


def build_fingerprint(folder: Path, config: str) -> str:
    """The manifest's fingerprint (SHA-256 of the shards in order), recomputed if absent."""
    manifest = read_manifest(folder, config) or {}
    recorded = (manifest.get("stats") or {}).get("fingerprint")
    if recorded:
        return recorded
    digest = hashlib.sha256()
    for path in shard_files(folder, config):
        with open(path, "rb") as handle:
            while block := handle.read(1 << 20):
                digest.update(block)
    return digest.hexdigest()


def _remote_fingerprint(uploader: RepoUploader, repo_id: str, config: str, revision: Optional[str],
                        remote_files: set[str]) -> Optional[str]:
    path = f"manifests/{config}.json"
    if path not in remote_files:
        return None
    text = uploader.read_text(repo_id, path, revision=revision)
    try:
        return (json.loads(text or "{}").get("stats") or {}).get("fingerprint")
    except json.JSONDecodeError:
        return None


def check_repo_id(repo_id: str) -> None:
    """Raise ValueError unless ``repo_id`` is a Hub repo id (``name`` or ``namespace/name``), by
    ``huggingface_hub``'s own rule; a dry run joins it onto a folder, so it must be checked too."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    try:
        validate_repo_id(repo_id)
    except HFValidationError as err:
        raise ValueError(f"--repo {repo_id!r} is not a Hub repo id: {err}") from None


# git's ref-name rules (git check-ref-format) that a path could abuse or the Hub would refuse
_BAD_REVISION = re.compile(r"^$|^/|/$|//|\.\.|^\.|/\.|\.lock$|\.$|@\{|[\s~^:?*\[\\\x00-\x1f\x7f]")


def check_revision(revision: Optional[str]) -> None:
    """Raise ValueError unless ``revision`` is a usable branch name: refused before anything is
    sent, as the Hub would refuse it, and before a dry run joins it onto a folder."""
    if revision is not None and _BAD_REVISION.search(revision):
        raise ValueError(f"--revision {revision!r} is not a branch name (git check-ref-format rules: "
                         "no '..', no leading '/' or '.', no spaces or ~^:?*[\\)")


def push_folder(folder: os.PathLike, repo_id: str, *, configs: Optional[list[str]] = None,
                private: bool = False, revision: Optional[str] = None,
                max_shard_size: Optional[str] = None, uploader: Optional[Any] = None,
                method: Optional[str] = None, num_proc: Optional[int] = None, force: bool = False,
                card: bool = True, allow_demo: bool = False, branch_per: Optional[str] = None) -> PushPlan:
    """Push every (or the named) config of ``folder`` to ``repo_id``, then the card.

    ``method`` is ``files`` (default when the uploader can commit files) or ``push_to_hub``.
    ``branch_per`` (``family`` or ``dataset``): each family's (dataset's) files on its own branch,
    the card on main (files method only; the branches are the revisions, so no ``revision``).
    A malformed ``repo_id`` (``../../x``, ``a/b/c``) or ``revision`` is refused before anything is
    read or sent.
    """
    check_repo_id(repo_id)
    check_revision(revision)
    folder = Path(folder)
    pending = sorted(folder.glob(".mmlb-relayout-*.pending"))
    if pending:  # manifests may lag the metadata: push would skip or delete by stale fingerprints
        raise ValueError(f"{folder}: a failed or killed build left a re-partitioning of its images unfinished "
                         f"({pending[0].name}); every config loads, but its manifests may lag: finish it with "
                         f"`mmlb gc {folder} --delete` (or any build into the folder), then push")
    names = configs or configs_in(folder)
    missing = [n for n in names if not shard_files(folder, n)]
    if missing:
        raise FileNotFoundError(f"{folder}: no built data for {', '.join(missing)}")
    demo = demo_configs(folder, names)
    if demo and not allow_demo:
        raise ValueError(f"{folder}: {', '.join(demo)} are synthetic demo data built by `mmlb demo`, not a "
                         "benchmark; refusing to publish them (pass --allow-demo to push anyway)")
    uploader = uploader or HubUploader()
    method = method or ("files" if hasattr(uploader, "commit") else "push_to_hub")
    if branch_per and method != "files":  # push_to_hub writes one revision: the set would all go to main
        raise ValueError(f"--branch-per needs the files method (--method files), not {method!r}")
    if method == "push_to_hub":
        return _push_with_datasets(folder, repo_id, names, uploader, private=private, revision=revision,
                                   max_shard_size=max_shard_size, num_proc=num_proc)
    if method != "files":
        raise ValueError(f"unknown push method {method!r} (files or push_to_hub)")
    if max_shard_size:
        raise ValueError("the files method uploads the shards as built: choose their size at build time "
                         "(`mmlb build --shard-size`), or use --method push_to_hub")
    if branch_per:
        if branch_per not in BRANCH_KEYS:
            raise ValueError(f"unknown --branch-per {branch_per!r} ({' or '.join(BRANCH_KEYS)})")
        if revision:
            raise ValueError("--branch-per pushes each family or dataset to its own branch and the card to main: "
                             "leave out --revision")
        return _push_branches(folder, repo_id, names, uploader, branch_per, private=private,
                              num_threads=max(1, num_proc or 5), force=force, card=card)
    return _push_files(folder, repo_id, names, uploader, private=private, revision=revision,
                       num_threads=max(1, num_proc or 5), force=force, card=card)


def _push_with_datasets(folder: Path, repo_id: str, names: list[str], uploader: Uploader, *, private: bool,
                        revision: Optional[str], max_shard_size: Optional[str],
                        num_proc: Optional[int]) -> PushPlan:
    kwargs: dict[str, Any] = {"private": private}
    if revision:
        kwargs["revision"] = revision
    if max_shard_size:
        kwargs["max_shard_size"] = max_shard_size
    if num_proc:
        kwargs["num_proc"] = num_proc
    plan = PushPlan(repo_id)
    for name in names:
        uploader.push_config(load_config(folder, name), repo_id, name, **kwargs)
        plan.configs.append(name)
    return plan


def _push_files(folder: Path, repo_id: str, names: list[str], uploader: RepoUploader, *, private: bool,
                revision: Optional[str], num_threads: int, force: bool, card: bool,
                fresh_branch: bool = False) -> PushPlan:
    plan = PushPlan(repo_id)
    uploader.prepare(repo_id, private=private, revision=revision, fresh_branch=fresh_branch)
    remote_files = set(uploader.list_files(repo_id, revision=revision))
    check_one_layout_on_hub(folder, names, remote_files, repo_id)
    # each config's own files on the Hub, indexed once: the repo may hold ~10^5 images besides them
    remote_configs = remote_config_files(remote_files)
    _push_image_folder_hint(folder, names, repo_id, uploader, revision, num_threads, remote_files, plan)
    for name in names:
        fingerprint = build_fingerprint(folder, name)
        if not force and _remote_fingerprint(uploader, repo_id, name, revision, remote_files) == fingerprint:
            plan.skipped.append(name)
            continue
        add = _config_payload(folder, name, uploader, repo_id, revision, num_threads, remote_files, plan)
        manifest = folder / "manifests" / f"{name}.json"
        if manifest.is_file():
            add[f"manifests/{name}.json"] = manifest
        # old files of this config (another shard count, the other layout) go in the same atomic commit
        delete = sorted(p for p in remote_configs.get(name, ()) if p not in add)
        uploader.commit(repo_id, add=add, delete=delete, message=f"Upload config {name} ({fingerprint[:12]})",
                        revision=revision, num_threads=num_threads)
        plan.configs.append(name)
        plan.files += sorted(add)
    _remove_unused_images(folder, repo_id, uploader, revision, num_threads, plan)
    if card:
        # list the local configs the repo now holds (not local ones left out of this push)
        on_hub = [n for n in configs_in(folder) if n in plan.configs or n in plan.skipped or n in remote_configs]
        _push_card(folder, repo_id, uploader, on_hub, revision, num_threads, plan, README in remote_files)
    return plan


def _push_image_folder_hint(folder: Path, names: list[str], repo_id: str, uploader: RepoUploader,
                            revision: Optional[str], num_threads: int, remote_files: set[str], plan: PushPlan) -> None:
    """The two PNGs every files-layout config's data files name (writer.IMAGE_FOLDER_HINT), in a
    commit of their own before any config's, when the repository lacks them (one pushed by an
    earlier mmlbdata gets them here even when every config is already there)."""
    missing = [path for path in IMAGE_FOLDER_HINT if path not in remote_files]
    if not missing or not any(is_files_layout(shard_files(folder, name)[0]) for name in names):
        return
    uploader.commit(repo_id, add={path: HINT_PNG for path in missing}, delete=[], revision=revision,
                    num_threads=num_threads, message="Upload imagefolder-hint/ (datasets reads the repository "
                                                     "with its image-folder builder)")
    remote_files.update(missing)
    plan.files += missing


def _push_card(folder: Path, repo_id: str, uploader: RepoUploader, on_hub: list[str], revision: Optional[str],
               num_threads: int, plan: PushPlan, readme_on_hub: bool,
               locations: Optional[dict[str, str]] = None) -> None:
    """Commit README.md (entries of ``on_hub``, the Hub's others kept) and stats.png, unless
    nothing changed; ``locations`` as in :func:`hub_readme`."""
    from mmlbdata.dataset.card import PLOT_NAME

    remote_readme = uploader.read_text(repo_id, README, revision=revision) if readme_on_hub else None
    plan.readme = hub_readme(folder, on_hub, remote_readme, locations)
    card_files: dict[str, Payload] = {README: plan.readme.encode("utf-8")}
    if (folder / PLOT_NAME).is_file():
        card_files[PLOT_NAME] = folder / PLOT_NAME
    if not plan.configs and plan.readme == remote_readme:
        return  # nothing new: no empty commit
    uploader.commit(repo_id, add=card_files, delete=[], message="Update dataset card", revision=revision,
                    num_threads=num_threads)
    plan.files += sorted(card_files)


BRANCH_KEYS = ("family", "dataset")  # the manifest key that names a config's branch


def config_branch(folder: Path, config: str, per: str) -> str:
    """The branch a config's files go to: ``family-<group>`` (the group its images are stored
    under, ``images/<group>/``) or ``dataset-<name>``, from its manifest (``shared`` if unknown)."""
    from mmlbdata.dataset.partitions import image_group_of

    return f"{per}-{image_group_of((read_manifest(folder, config) or {}).get(per))}"


def branch_location(repo_id: str, branch: str) -> str:
    """Where a README on main names a file of ``branch``: ``datasets`` accepts any data file whose
    path starts with ``datasets/<repo_id>@`` (builder.py), whatever the revision."""
    return f"hf://datasets/{repo_id}@{branch}/"


def _branch_files(uploader: RepoUploader, repo_id: str, branch: str) -> list[str]:
    """The files of ``branch``; none when the Hub has no such branch (a family of the folder that
    was never pushed: ``--config`` named others)."""
    from huggingface_hub.errors import RevisionNotFoundError

    try:
        return uploader.list_files(repo_id, revision=branch)
    except RevisionNotFoundError:
        return []


def _push_branches(folder: Path, repo_id: str, names: list[str], uploader: RepoUploader, per: str, *,
                   private: bool, num_threads: int, force: bool, card: bool) -> PushPlan:
    """Each family's (dataset's) configs pushed to its branch as :func:`_push_files` pushes a repo
    (resumable, unused images removed per branch), then the card on main naming every config's
    files on its branch. Configs of the folder already on their branch stay listed. An image two
    datasets use is on both their branches (one stored object: the Hub stores files by content).
    A new branch starts from the repository's first commit, not main's head (which may hold a
    flat push, or the card)."""
    plan = PushPlan(repo_id)
    uploader.prepare(repo_id, private=private, revision=None)
    by_branch: dict[str, list[str]] = {}
    for name in configs_in(folder):  # every local config, to list those already on their branch
        by_branch.setdefault(config_branch(folder, name, per), []).append(name)
    on_hub: list[str] = []
    for branch, configs in sorted(by_branch.items()):
        check_revision(branch)
        mine = [n for n in configs if n in names]
        if mine:
            part = _push_files(folder, repo_id, mine, uploader, private=private, revision=branch,
                               num_threads=num_threads, force=force, card=False, fresh_branch=True)
            plan.configs += part.configs
            plan.skipped += part.skipped
            plan.files += part.files
            plan.removed += part.removed
            plan.kept_unused_for += part.kept_unused_for
        held = set(remote_config_files(set(_branch_files(uploader, repo_id, branch)))) if mine or card else set()
        if held.intersection(configs):
            plan.branches[branch] = [n for n in configs if n in held]
            on_hub += plan.branches[branch]
    if card:
        locations = {n: branch_location(repo_id, b) for b, configs in plan.branches.items() for n in configs}
        main_files = set(uploader.list_files(repo_id, revision=None))
        _push_card(folder, repo_id, uploader, sorted(on_hub), None, num_threads, plan, README in main_files,
                   locations)
    return plan


def _remove_unused_images(folder: Path, repo_id: str, uploader: RepoUploader, revision: Optional[str],
                          num_threads: int, plan: PushPlan) -> None:
    """Delete the repo's images that no config of the repo uses (what ``mmlb gc`` removes from a
    folder), :data:`IMAGE_COMMIT_FILES` per commit, after every config's commit (so a config on the
    Hub never names a deleted image); a rerun resumes. Only when every config the repo holds is a
    config of ``folder`` at the same build: a config pushed from elsewhere names images this folder
    cannot know, so then nothing is deleted (``plan.kept_unused_for`` names those configs)."""
    from mmlbdata.dataset.cleanup import referenced_images

    remote_files = set(uploader.list_files(repo_id, revision=revision))
    remote_configs = sorted(remote_config_files(remote_files))
    local = set(configs_in(folder))
    same_build = set(plan.configs) | set(plan.skipped)
    plan.kept_unused_for = [
        name for name in remote_configs
        if name not in same_build and (name not in local or build_fingerprint(folder, name) !=
                                       _remote_fingerprint(uploader, repo_id, name, revision, remote_files))]
    if plan.kept_unused_for:
        return
    used = referenced_images(folder, remote_configs)
    unused = sorted(p for p in remote_files if p.startswith(f"{IMAGES_DIR}/") and p not in used)
    for start in range(0, len(unused), IMAGE_COMMIT_FILES):
        batch = unused[start:start + IMAGE_COMMIT_FILES]
        uploader.commit(repo_id, add={}, delete=batch, revision=revision, num_threads=num_threads,
                        message=f"Remove images no config uses ({start + len(batch)}/{len(unused)})")
        plan.removed += batch


def remote_config_files(remote_files: set[str]) -> dict[str, list[str]]:
    """config -> its files among a repo's: its ``data/<config>/`` shards and its metadata file."""
    by_config: dict[str, list[str]] = {}
    for path in remote_files:
        parts = path.split("/")
        if len(parts) >= 3 and parts[0] == "data":
            by_config.setdefault(parts[1], []).append(path)
        elif len(parts) == 1 and path.endswith(METADATA_SUFFIX):
            by_config.setdefault(path[:-len(METADATA_SUFFIX)], []).append(path)
    return by_config


def check_one_layout_on_hub(folder: Path, names: list[str], remote_files: set[str], repo_id: str) -> None:
    """Refuse, before anything is sent, a push that would leave the repo holding configs in both
    layouts: ``datasets`` reads every config of a repo with one builder (inferred from its first
    config's files), so the configs of the other layout would no longer load (the writer refuses
    the same mix in a folder)."""
    layouts = {}  # config -> layout, as the repo will hold it after this push
    for path in remote_files:
        parts = path.split("/")
        if len(parts) == 3 and parts[0] == "data" and parts[2].startswith(f"{SPLIT}-"):
            layouts[parts[1]] = "embedded"
        elif len(parts) == 1 and path.endswith(METADATA_SUFFIX):
            layouts[path[:-len(METADATA_SUFFIX)]] = "files"
    for name in names:
        files = shard_files(folder, name)
        layouts[name] = "files" if files and is_files_layout(files[0]) else "embedded"
    mine = {layouts[name] for name in names}
    others = sorted(name for name, layout in layouts.items() if layout not in mine)
    if len(mine) == 1 and others:
        layout = mine.pop()
        raise ValueError(f"{layout_conflict(repo_id, others, other_layout(layout))}, this push sends the {layout} "
                         "layout; datasets reads one layout per repository: rebuild and push those configs in this "
                         "layout, or push to another repository")


def _config_payload(folder: Path, name: str, uploader: RepoUploader, repo_id: str, revision: Optional[str],
                    num_threads: int, remote_files: set[str], plan: PushPlan) -> dict[str, Payload]:
    """The files of ``name``'s own commit; a files-layout config's missing images are committed
    first, :data:`IMAGE_COMMIT_FILES` at a time (``remote_files`` learns them)."""
    files = shard_files(folder, name)
    if not (files and is_files_layout(files[0])):
        return {f"data/{name}/{p.name}": p for p in files}
    missing = [p for p in image_paths(files[0]) if p not in remote_files]
    for start in range(0, len(missing), IMAGE_COMMIT_FILES):
        batch = missing[start:start + IMAGE_COMMIT_FILES]
        add: dict[str, Payload] = {p: resolve_inside(folder, p, what="image path") for p in batch}
        uploader.commit(repo_id, add=add, delete=[], revision=revision, num_threads=num_threads,
                        message=f"Upload images of {name} ({start + len(batch)}/{len(missing)} new)")
        remote_files.update(batch)
        plan.files += batch
    return {metadata_filename(name): files[0]}


def hub_info_entries(folder: Path, config: str, location: str = ""):
    """``(DatasetInfo, metadata config)`` of one config, in the form ``Dataset.push_to_hub`` writes;
    ``location`` prefixes its data files (``hf://datasets/<repo>@<branch>/``: files on a branch)."""
    from datasets.info import DatasetInfo
    from datasets.splits import SplitDict, SplitInfo

    from mmlbdata.dataset.card import config_data_entry, config_features, image_dirs
    from mmlbdata.dataset.stats import config_distribution

    dist = config_distribution(folder, config)
    info = DatasetInfo(config_name=config, features=config_features(folder, config), splits=SplitDict(),
                       download_size=0, dataset_size=0)
    info.splits.add(SplitInfo(name=SPLIT, num_bytes=dist.num_bytes, num_examples=len(dist.num_tokens)))
    info.download_size += dist.num_bytes
    info.dataset_size += dist.num_bytes
    info.size_in_bytes = info.download_size + info.dataset_size
    entry = config_data_entry(config, image_dirs(dist.image_files))
    entry.pop("config_name")
    if "metadata_filenames" not in entry:  # the form push_to_hub writes
        entry["data_files"] = [{"split": SPLIT, "path": f"data/{config}/{SPLIT}-*"}]
    if location:
        for split in entry["data_files"]:
            paths = split["path"]
            split["path"] = location + paths if isinstance(paths, str) else [location + p for p in paths]
    return info, entry


def hub_readme(folder: Path, names: list[str], remote_readme: Optional[str],
               locations: Optional[dict[str, str]] = None) -> str:
    """The README to send: the local card over the Hub's; the entries of ``names`` (configs the repo
    holds) updated by ``datasets``' own logic, the Hub's other entries kept. ``locations`` gives a
    config's files' prefix when they are not at the root of this revision (a family's branch)."""
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard, DatasetCardData

    from mmlbdata.dataset.card import DEFAULT_BODY_MARK, split_front_matter, with_image_folder_hint

    local_text = (folder / README).read_text(encoding="utf-8") if (folder / README).is_file() else ""
    local_meta, local_body = split_front_matter(local_text)
    remote_meta, remote_body = split_front_matter(remote_readme or "")
    data = DatasetCardData(**remote_meta)
    for key, value in local_meta.items():
        if key not in ("configs", "dataset_info"):
            data[key] = value
    for name in sorted(names):
        info, metadata_config = hub_info_entries(folder, name, (locations or {}).get(name, ""))
        DatasetInfosDict({name: info}).to_dataset_card_data(data)
        MetadataConfigs({name: metadata_config}).to_dataset_card_data(data)
    if data.get("configs"):  # the Hub's entries of configs pushed by an earlier mmlbdata name the hint too
        data["configs"] = [with_image_folder_hint(entry) for entry in data["configs"]]
    body = local_body
    if (not body.strip() or body.startswith(DEFAULT_BODY_MARK)) and remote_body.strip():
        body = remote_body  # keep a real card already on the Hub over our placeholder
    return str(DatasetCard(f"---\n{data.to_yaml()}\n---\n\n{body.strip()}\n"))

