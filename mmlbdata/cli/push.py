"""``mmlb push DIR --repo org/mmlb``: publish built configs and the card to the Hugging Face Hub."""
from __future__ import annotations

import argparse
import re
import sys

from mmlbdata.cli._common import absolute, built_folder_problem
from mmlbdata.dataset.card import DEFAULT_BODY_MARK
from mmlbdata.dataset.hub import FolderUploader, push_folder


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "push", help="publish a built folder to the Hugging Face Hub",
        description="Upload a built folder's configs, then the card (README.md, stats.png). Files layout (the "
                    "default of `mmlb build`): the image files the repository lacks go first, in commits of at "
                    "most 100 files (an image shared by configs is sent once), then one commit per config "
                    "holds its <config>.metadata.parquet and manifest; images no config of the repository uses "
                    "are then deleted. Embedded layout: one commit per config holds its parquet shards (image "
                    "bytes inside) and manifest. Resumable: a config already on the Hub with the same build "
                    "fingerprint is skipped, images already there are not sent again. Without `mmlb card` "
                    "first, the card is the placeholder `mmlb build` writes (said when pushed). The token comes "
                    "from `hf auth login` or HF_TOKEN; it is never printed.")
    parser.add_argument("folder", help="a folder written by `mmlb build` (run `mmlb card` first for the card)")
    parser.add_argument("--repo", required=True, help="Hub dataset repo id, e.g. org/mmlb")
    parser.add_argument("--config", action="append", default=None, help="only these configs")
    parser.add_argument("--private", action="store_true", help="create the repo as private")
    parser.add_argument("--revision", default=None, help="branch to push to (created if absent)")
    parser.add_argument("--branch-per", choices=["family", "dataset"], default=None,
                        help="put each family's (dataset's) files (metadata, images, manifests) on its own "
                             "branch family-<name> (dataset-<name>) of the repo and only the card on main, whose "
                             "configs name their files as hf://datasets/<repo>@<branch>/...: one name for every "
                             "config, each branch's tree within the Hub's 100k-files recommendation (files "
                             "method; `dataset` where one family's branch would exceed it)")
    parser.add_argument("--method", choices=["files", "push_to_hub"], default="files",
                        help="files: upload the shards as built (default); push_to_hub: "
                             "Dataset.push_to_hub per config (re-encodes rows)")
    parser.add_argument("--max-shard-size", default=None,
                        help="with --method push_to_hub, e.g. 500MB (the files method keeps the build's "
                             "shards: see `mmlb build --shard-size`)")
    parser.add_argument("--num-proc", type=int, default=None,
                        help="upload threads (files) or processes (push_to_hub)")
    parser.add_argument("--force", action="store_true", help="push configs even if the Hub has the same build")
    parser.add_argument("--allow-demo", action="store_true",
                        help="publish configs built by `mmlb demo` (synthetic; refused by default)")
    parser.add_argument("--no-card", action="store_true", help="do not update README.md / stats.png")
    parser.add_argument("--dry-run", metavar="DIR", default=None,
                        help="write what would be sent into DIR/<repo>/<revision> instead of the Hub")
    parser.set_defaults(func=run)


_NETWORK_MODULES = ("huggingface_hub", "httpx", "httpx2", "requests", "urllib3")
_SECRET = re.compile(r"\bhf_[A-Za-z0-9]{6,}|(?i:bearer)\s+\S+")


def is_hub_failure(err: BaseException) -> bool:
    """An HTTP/network failure (HfHubHTTPError, a refused connection), not a bug in mmlbdata."""
    return isinstance(err, OSError) or type(err).__module__.split(".")[0] in _NETWORK_MODULES


def one_line(err: BaseException) -> str:
    """The error's type and message on one line, any token-looking text masked, at most 300 chars."""
    text = _SECRET.sub("***", " ".join(str(err).split()))
    return f"{type(err).__name__}: {text[:300]}"


def run(args: argparse.Namespace) -> int:
    problem = built_folder_problem(args.folder, args.config)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    uploader = FolderUploader(args.dry_run) if args.dry_run else None
    try:
        plan = push_folder(args.folder, args.repo, configs=args.config, private=args.private,
                           revision=args.revision, max_shard_size=args.max_shard_size, uploader=uploader,
                           method=args.method, num_proc=args.num_proc, force=args.force, card=not args.no_card,
                           allow_demo=args.allow_demo, branch_per=args.branch_per)
    except (FileNotFoundError, ValueError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    except Exception as err:  # the Hub refused or could not be reached: one line, never a token
        if not is_hub_failure(err):
            raise
        print(f"error: push to {args.repo} failed: {one_line(err)}", file=sys.stderr)
        return 1
    names = ", ".join(plan.configs) or "-"
    if args.dry_run:
        print(f"would push {len(plan.configs)} config(s) to {plan.repo_id}: {names}\n"
              f"(dry run: the files that would be sent are in {absolute(args.dry_run)})")
    else:
        print(f"pushed {len(plan.configs)} config(s) to {plan.repo_id}: {names}")
    for branch, configs in sorted(plan.branches.items()):
        print(f"branch {branch}: {', '.join(configs) or '-'}")
    if plan.skipped:
        print(f"already on the Hub with the same build: {', '.join(plan.skipped)}")
    if plan.removed:
        print(f"{'would remove' if args.dry_run else 'removed'} {len(plan.removed)} image(s) no config of the repo uses")
    if plan.kept_unused_for:
        print(f"kept the repo's unused images: it holds config(s) built elsewhere ({', '.join(plan.kept_unused_for)})")
    if DEFAULT_BODY_MARK in plan.readme:
        print(f"note: the card {'that would be sent' if args.dry_run else 'sent'} is the placeholder `mmlb build` writes "
              f"(no `mmlb card` was run on {args.folder}): run `mmlb card {args.folder} --repo {args.repo}`, then "
              "push again, for the full card (configs already there are skipped)", file=sys.stderr)
    return 0
