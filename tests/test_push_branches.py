"""``mmlb push --branch-per family|dataset``: every config through one repository name, each family's
files on its own branch, the card on main naming them as ``hf://datasets/<repo>@<branch>/...``
(issue 31: one name for the whole published set within the Hub's per-tree file recommendations).
Loaded with plain ``datasets`` in a fresh process from tests/loopback_hub.py serving the branches."""
from __future__ import annotations

from pathlib import Path

import pytest
from test_layout import _images, _rows

from mmlbdata.core.store import ImageStore
from mmlbdata.dataset.build import store_config
from mmlbdata.dataset.hub import FolderUploader, push_folder
from mmlbdata.dataset.stats import image_paths
from mmlbdata.dataset.writer import IMAGE_FOLDER_HINT

# config: (family, dataset, rows). Family toy: toy_8k and toy_32k share images 0 and 2; twin_8k (another
# dataset of the family) shares 0 and 4 with them; other_8k (family other) uses 3, 5, 6
CONFIGS = {"toy_8k": ("toy", "toy", [[0, 1, 1, 2], [3], [2, 2, 0]]), "toy_32k": ("toy", "toy", [[2, 4, 0], [4, 4]]),
           "twin_8k": ("toy", "twin", [[4, 0]]), "other_8k": ("other", "other", [[5, 3], [6]])}
REPO = "org/mmlb"

LOAD = """
import hashlib, sys
import datasets
datasets.disable_progress_bars()
kwargs = {"streaming": True} if sys.argv[3] == "stream" else {}
for row in datasets.load_dataset(sys.argv[1], sys.argv[2], split="test", **kwargs):
    print(row["id"], *[hashlib.md5(image.convert("RGB").tobytes()).hexdigest() for image in row["images"]])
"""


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("branches")
    refs = _images(ImageStore(tmp / "store"), 7)
    out = tmp / "out"
    for config, (family, dataset, pattern) in CONFIGS.items():
        store_config(out, config, _rows(refs, pattern), manifest={"family": family, "dataset": dataset})
    return out


def _push(folder: Path, root: Path, per: str = "family") -> tuple[FolderUploader, object]:
    uploader = FolderUploader(root)
    return uploader, push_folder(folder, REPO, uploader=uploader, card=True, branch_per=per)


def _served(uploader: FolderUploader) -> dict:
    branches = {b.name: _files(b) for b in sorted(uploader.repo_dir(REPO).parent.iterdir()) if b.name != "main"}
    return {"repos": {REPO: _files(uploader.repo_dir(REPO))}, "branches": {REPO: branches}}


@pytest.mark.parametrize("per, branches", [
    ("family", {"family-other": ["other_8k"], "family-toy": ["toy_32k", "toy_8k", "twin_8k"]}),
    ("dataset", {"dataset-other": ["other_8k"], "dataset-toy": ["toy_32k", "toy_8k"], "dataset-twin": ["twin_8k"]})])
def test_each_family_or_dataset_goes_to_its_branch_and_main_holds_the_card(built, tmp_path, per, branches):
    readme_before = (built / "README.md").read_bytes()
    uploader, plan = _push(built, tmp_path / "hub", per)
    assert plan.branches == branches
    assert sorted(_files(uploader.repo_dir(REPO))) == ["README.md"]
    for branch, configs in plan.branches.items():
        held = _files(uploader.repo_dir(REPO, branch))
        images = {p for c in configs for p in image_paths(built / f"{c}.metadata.parquet")}
        assert {p for p in held if p.startswith("images/")} == images  # its own images, once each
        assert {p for p in held if not p.startswith("images/")} == {
            name for c in configs for name in (f"{c}.metadata.parquet", f"manifests/{c}.json")} | set(IMAGE_FOLDER_HINT)
    for config in CONFIGS:
        branch = next(b for b, configs in branches.items() if config in configs)
        assert f"hf://datasets/{REPO}@{branch}/{config}.metadata.parquet" in plan.readme
    assert "hf://" not in readme_before.decode()
    assert (built / "README.md").read_bytes() == readme_before  # the folder keeps its relative README


def test_a_second_push_resumes_without_a_commit(built, tmp_path):
    uploader, _ = _push(built, tmp_path / "hub")
    commits = len(uploader.commits)
    again = push_folder(built, REPO, uploader=uploader, card=True, branch_per="family")
    assert sorted(again.skipped) == sorted(CONFIGS) and again.configs == []
    assert len(uploader.commits) == commits


def test_branch_per_family_refuses_a_revision(built, tmp_path):
    with pytest.raises(ValueError, match="leave out --revision"):
        push_folder(built, REPO, uploader=FolderUploader(tmp_path / "hub"), revision="dev", branch_per="family")


@pytest.mark.parametrize("per, configs", [("family", ("toy_8k", "other_8k")), ("dataset", ("twin_8k", "toy_8k"))])
def test_plain_datasets_loads_configs_of_two_branches_through_one_name(built, tmp_path, per, configs):
    """In memory and streaming, a fresh process with plain datasets: the rows and decoded pixels
    of the local folder, each config fetching images from its own branch only."""
    from loopback_hub import LoopbackHub

    uploader, plan = _push(built, tmp_path / "hub", per)
    with LoopbackHub(**_served(uploader)) as hub:
        expected = {config: hub.run_client(LOAD, str(built), config, "memory", hf_home=tmp_path / f"local-{config}")
                    for config in configs}  # the local folder, its relative README
        assert all(len(text.splitlines()) == len(CONFIGS[c][2]) for c, text in expected.items())
        for config in configs:
            for mode in ("memory", "stream"):
                before = len(hub.requests)
                got = hub.run_client(LOAD, REPO, config, mode, hf_home=tmp_path / f"hf-{config}-{mode}")
                assert got == expected[config], (config, mode)
                images = {path.split("/resolve/", 1)[1] for _, path in hub.requests[before:] if "/images/" in path}
                branch = next(b for b, names in plan.branches.items() if config in names)
                assert images and all(path.startswith(f"{branch}/") for path in images), (config, mode, images)
                assert {p.split("/", 1)[1] for p in images} == set(image_paths(built / f"{config}.metadata.parquet"))


def test_a_readme_naming_another_repository_is_refused_by_datasets(built, tmp_path):
    """What one index repository over per-family repositories runs into (datasets builder.py:
    "Data files don't belong to"); branches of the same repository pass the same check."""
    from loopback_hub import LoopbackHub

    uploader, plan = _push(built, tmp_path / "hub")
    served = _served(uploader)
    index = plan.readme.replace(f"hf://datasets/{REPO}@", "hf://datasets/org/mmlb-data@")
    served["repos"]["org/index"] = {"README.md": index.encode()}
    served["repos"]["org/mmlb-data"] = served["branches"][REPO]["family-toy"]
    served["branches"]["org/mmlb-data"] = served["branches"][REPO]
    with LoopbackHub(**served) as hub, pytest.raises(AssertionError, match="Data files don't belong to org/index"):
        hub.run_client(LOAD, "org/index", "toy_8k", "memory", hf_home=tmp_path / "hf-index")


def test_a_card_naming_the_branches_by_commit_sha_or_tag_loads_the_same(built, tmp_path):
    """The pinned alternatives to a branch name (a README on main that names each branch's commit,
    or a tag on it, gives the same rows whatever the branches receive later)."""
    from loopback_hub import LoopbackHub, commit_of

    uploader, plan = _push(built, tmp_path / "hub")
    served = _served(uploader)
    pinned = plan.readme.replace(f"{REPO}@family-toy/", f"{REPO}@{commit_of(REPO, 'family-toy')}/")
    pinned = pinned.replace(f"{REPO}@family-other/", f"{REPO}@v1-other/")
    with LoopbackHub(**served) as hub:
        expected = {c: hub.run_client(LOAD, REPO, c, "memory", hf_home=tmp_path / f"branch-{c}") for c in ("toy_8k", "other_8k")}
    served["repos"][REPO] = {"README.md": pinned.encode()}
    with LoopbackHub(**served, tags={REPO: {"v1-other": "family-other"}}) as hub:
        for config in ("toy_8k", "other_8k"):
            assert hub.run_client(LOAD, REPO, config, "memory", hf_home=tmp_path / f"pinned-{config}") == expected[config]
        assert any(commit_of(REPO, "family-toy") in path for _, path in hub.requests)
        assert any("/resolve/v1-other/" in path for _, path in hub.requests)


def test_a_config_whose_images_are_on_another_branch_than_its_metadata_does_not_load(built, tmp_path):
    """Why a config's files share one branch: datasets joins a row's file names onto its metadata
    file's folder (folder_based_builder.py), the snapshot of that commit in memory and
    ``hf://...@<revision>/`` when streaming, so images listed from another branch are not found."""
    from loopback_hub import LoopbackHub

    uploader, plan = _push(built, tmp_path / "hub")
    served = _served(uploader)
    toy = served["branches"][REPO]["family-toy"]
    served["branches"][REPO]["pixels"] = {p: b for p, b in toy.items() if p.startswith("images/")}
    served["branches"][REPO]["family-toy"] = {p: b for p, b in toy.items() if not p.startswith("images/")}
    split = plan.readme.replace(f"{REPO}@family-toy/images/", f"{REPO}@pixels/images/")
    served["repos"][REPO] = {"README.md": split.encode()}
    with LoopbackHub(**served) as hub:
        for mode in ("memory", "stream"):
            with pytest.raises(AssertionError, match="FileNotFoundError"):
                hub.run_client(LOAD, REPO, "toy_8k", mode, hf_home=tmp_path / f"hf-{mode}")


def test_streaming_one_row_from_a_branch_fetches_that_rows_images_only(tmp_path):
    """The card's ``decode_num_threads: 0`` still holds when the files are on a branch: reading one
    streamed row of 40 fetches one image (datasets 5.2 reads 64 rows ahead without it)."""
    from loopback_hub import LoopbackHub

    refs = _images(ImageStore(tmp_path / "store"), 40)
    out = tmp_path / "out"
    store_config(out, "toy_8k", _rows(refs, [[i] for i in range(40)]), manifest={"family": "toy", "dataset": "toy"})
    uploader, _ = _push(out, tmp_path / "hub")
    first_row = "import sys, datasets\nprint(next(iter(datasets.load_dataset(sys.argv[1], sys.argv[2], " \
                "split='test', streaming=True)))['id'])"
    with LoopbackHub(**_served(uploader)) as hub:
        assert hub.run_client(first_row, REPO, "toy_8k", hf_home=tmp_path / "hf").strip() == "r0"
        fetched = {path for method, path in hub.requests if method == "GET" and "/images/" in path}
    assert len(fetched) == 1 and "/resolve/family-toy/" in fetched.pop()


class HubLikeUploader(FolderUploader):
    """A FolderUploader that answers a missing branch as the Hub does (RevisionNotFoundError)."""

    def list_files(self, repo_id, *, revision):
        import httpx2
        from huggingface_hub.errors import RevisionNotFoundError

        if revision and not self.repo_dir(repo_id, revision).is_dir():
            response = httpx2.Response(404, request=httpx2.Request("GET", f"http://hub/api/datasets/{repo_id}"))
            raise RevisionNotFoundError(f"no revision {revision}", response=response)
        return super().list_files(repo_id, revision=revision)


def test_pushing_one_family_lists_only_it_and_the_others_are_added_by_the_next_push(built, tmp_path):
    """--config of one family: its branch is created, the other family's branch does not exist yet
    (the Hub answers RevisionNotFound) and the card lists what the repo holds; the next push adds
    the other family and keeps the first (skipped, same build)."""
    uploader = HubLikeUploader(tmp_path / "hub")
    first = push_folder(built, REPO, configs=["other_8k"], uploader=uploader, card=True, branch_per="family")
    assert first.branches == {"family-other": ["other_8k"]}
    assert "other_8k" in first.readme and "toy_8k" not in first.readme
    second = push_folder(built, REPO, uploader=uploader, card=True, branch_per="family")
    assert second.skipped == ["other_8k"] and sorted(second.configs) == ["toy_32k", "toy_8k", "twin_8k"]
    for config in CONFIGS:
        assert f"{config}.metadata.parquet" in second.readme


def test_the_cli_dry_run_says_which_configs_each_branch_holds(built, tmp_path, capsys):
    from mmlbdata.cli import main

    assert main(["push", str(built), "--repo", REPO, "--branch-per", "dataset", "--dry-run", str(tmp_path / "hub")]) == 0
    out = capsys.readouterr().out
    assert "branch dataset-toy: toy_32k, toy_8k" in out and "branch dataset-twin: twin_8k" in out
    assert sorted(p.name for p in (tmp_path / "hub" / REPO).iterdir()) == [
        "dataset-other", "dataset-toy", "dataset-twin", "main"]
    assert main(["push", str(built), "--repo", REPO, "--branch-per", "family", "--revision", "dev",
                 "--dry-run", str(tmp_path / "hub2")]) == 1
    assert "leave out --revision" in capsys.readouterr().err


def test_branch_per_with_the_push_to_hub_method_is_refused_not_ignored(built, tmp_path):
    """push_to_hub writes every config to one revision: --branch-per would silently push the whole
    set to main (the tree --branch-per exists to keep within the Hub's file recommendations)."""
    class PushToHubOnly:
        def __init__(self):
            self.pushed = []

        def push_config(self, dataset, repo_id, config_name, **kwargs):
            self.pushed.append((config_name, kwargs))

    uploader = PushToHubOnly()
    for method in ("push_to_hub", None):  # named, or the default for an uploader without commit
        with pytest.raises(ValueError, match="--branch-per"):
            push_folder(built, REPO, uploader=uploader, method=method, branch_per="family")
    assert uploader.pushed == []


def test_a_new_branch_starts_from_the_first_commit_not_a_flat_push_on_main():
    """HubUploader: a --branch-per branch that does not exist yet is created from main's first
    commit (the Hub would otherwise start it at main's head, copying a former flat push of ~10^5
    files onto every branch); an existing branch is left as it is; plain --revision still starts
    from main."""
    from types import SimpleNamespace

    from mmlbdata.dataset.hub import HubUploader

    class FakeApi:
        def __init__(self):
            self.created, self.branches = [], ["main", "family-old"]

        def create_repo(self, *args, **kwargs):
            pass

        def list_repo_refs(self, repo_id, repo_type):
            return SimpleNamespace(branches=[SimpleNamespace(name=b) for b in self.branches])

        def list_repo_commits(self, repo_id, repo_type):
            return [SimpleNamespace(commit_id=c) for c in ("head-flat-push", "card", "first-gitattributes")]

        def create_branch(self, repo_id, repo_type, branch, revision, exist_ok):
            self.created.append((branch, revision))

    uploader = HubUploader.__new__(HubUploader)
    uploader.api = FakeApi()
    uploader.prepare("org/mmlb", private=False, revision="family-new", fresh_branch=True)
    uploader.prepare("org/mmlb", private=False, revision="family-old", fresh_branch=True)
    uploader.prepare("org/mmlb", private=False, revision="v2")
    assert uploader.api.created == [("family-new", "first-gitattributes"), ("family-old", None), ("v2", None)]
