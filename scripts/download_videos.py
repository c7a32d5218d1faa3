"""Download a LongVideoBench-style list of videos with yt-dlp (no shell): see
``mmlbdata.media.download_video``. Usage: ``python scripts/download_videos.py ids.txt --out videos/``."""
import sys

from mmlbdata.media.download_video import main

if __name__ == "__main__":
    sys.exit(main())
