"""Write release-shaped subtitle JSON for videos without subtitles: see
``mmlbdata.media.transcribe``. Usage:
``python scripts/transcribe.py videos/ subtitles/ --backend faster-whisper --model large-v3``."""
import sys

from mmlbdata.media.transcribe import main

if __name__ == "__main__":
    sys.exit(main())
