"""``mmlb gc FOLDER [--delete]``: the images no config of a built folder uses, and stale staging
folders; a dry run unless --delete (removing is irreversible, and rebuilding what went wrongly
can take hours of rendering)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mmlbdata.cli._common import built_folder_problem
from mmlbdata.core.report import human_bytes
from mmlbdata.dataset.build import finish_relayouts, pending_relayouts
from mmlbdata.dataset.cleanup import FolderBusyError, apply_cleanup, plan_cleanup
from mmlbdata.dataset.stats import DamagedShardError


def register(sub: argparse._SubParsersAction) -> None:
    parser = sub.add_parser(
        "gc", help="remove images no config of a built folder uses (dry run unless --delete)",
        description="List, and with --delete remove, the files under FOLDER/images/ that no config's "
                    "<config>.metadata.parquet names (left by rebuilds: a build never deletes an image, "
                    "since other configs, or a build running beside it, may use it), and the staging "
                    "folders of killed builds (.<config>.partial/, data/.<config>.partial/, "
                    "data/.<config>.old/) whose config no build is writing. An image a config uses is "
                    "never removed. Refused while a build writes into FOLDER, when FOLDER holds no "
                    "built config, or when a metadata file cannot be read. Run it after builds, before "
                    "`mmlb push`, which then deletes the same images from the Hub repository.",
        epilog="Without --delete nothing is removed (a dry run): removal is irreversible, and an image "
               "removed by mistake (a folder copied without its metadata files, say) means rebuilding "
               "from the sources.")
    parser.add_argument("folder", help="a folder written by `mmlb build` (either layout)")
    parser.add_argument("--delete", action="store_true",
                        help="remove what is listed (default: only list it, with counts and bytes)")
    parser.add_argument("--list", action="store_true", help="also print every path that is (or would be) removed")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    problem = None if Path(args.folder).is_dir() else built_folder_problem(args.folder)  # a mistyped folder
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 1
    try:
        pending = pending_relayouts(args.folder)
        if pending and args.delete:  # first, as the next build would: then the unused images are known
            for group in finish_relayouts(args.folder):
                print(f"finished the re-partitioning of images/{group} that a failed or killed build left")
        plan = plan_cleanup(args.folder)
        if args.delete and not plan.empty:
            apply_cleanup(plan)
    except (FileNotFoundError, FolderBusyError, DamagedShardError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    print(f"{plan.folder}: {len(plan.configs)} config(s) use {plan.used_images:,} image file(s) "
          f"({human_bytes(plan.used_bytes)})")
    if plan.missing_images:
        print(f"warning: {len(plan.missing_images):,} image(s) that configs name are missing "
              f"(e.g. {plan.missing_images[0]}): rebuild the configs that use them", file=sys.stderr)
    verb = "removed" if args.delete else "would remove"
    print(f"{verb} {len(plan.unused_images):,} image file(s) no config uses ({human_bytes(plan.unused_bytes)})")
    print(f"{verb} {len(plan.staging):,} staging folder(s) of killed builds ({human_bytes(plan.staging_bytes)})")
    if args.list:
        for relative in plan.unused_images + plan.staging:
            print(f"  {relative}")
    if pending and not args.delete:
        print(f"would finish the re-partitioning of images/{', images/'.join(pending)} that a failed or killed build "
              "left (every config loads meanwhile)")
    if not args.delete and (not plan.empty or pending):
        print(f"dry run: nothing removed; `mmlb gc {args.folder} --delete` removes them")
    return 0
