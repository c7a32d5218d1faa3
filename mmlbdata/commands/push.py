"""``mmlb push DIR --repo org/mmlb``: publish built configs to the Hugging Face Hub."""
from __future__ import annotations

import argparse

from ..hub import push_folder


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser("push", help="publish a built folder to the Hugging Face Hub",
                            description="Push each config of a built folder with Dataset.push_to_hub "
                                        "(config_name=CONFIG, split='test'), embedding image bytes. The token "
                                        "comes from `huggingface-cli login` or HF_TOKEN; it is never printed.")
    parser.add_argument("folder", help="a folder written by `mmlb build`")
    parser.add_argument("--repo", required=True, help="Hub dataset repo id, e.g. org/mmlb")
    parser.add_argument("--config", action="append", default=None, help="only these configs")
    parser.add_argument("--private", action="store_true", help="create the repo as private")
    parser.add_argument("--revision", default=None, help="branch to push to")
    parser.add_argument("--max-shard-size", default=None, help="e.g. 500MB")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    plan = push_folder(args.folder, args.repo, configs=args.config, private=args.private,
                       revision=args.revision, max_shard_size=args.max_shard_size)
    print(f"pushed {len(plan.configs)} config(s) to {plan.repo_id}: {', '.join(plan.configs)}")
    return 0
