"""Download Emory's public Friends season files (for users with internet)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from ragfunnel.errors import RagfunnelError

EMORY_URL = "https://raw.githubusercontent.com/emorynlp/character-mining/master/json/friends_season_{n:02d}.json"
SEASONS = range(1, 11)


def download_friends(
    dest: str | Path,
    url_template: str = EMORY_URL,
    timeout: float = 30.0,
    progress: Callable[[int, int], None] | None = None,
) -> list[Path]:
    """Fetch friends_season_01..10.json into `dest` (each written to a temp name, renamed when complete)."""
    dest = Path(dest).expanduser()
    dest.mkdir(parents=True, exist_ok=True)
    written = []
    for i, n in enumerate(SEASONS, 1):
        target = dest / f"friends_season_{n:02d}.json"
        if not target.exists():
            url = url_template.format(n=n)
            try:
                with urllib.request.urlopen(url, timeout=timeout) as response:
                    body = response.read()
                json.loads(body)  # refuse to save an error page
            except (urllib.error.URLError, TimeoutError, OSError) as exc:
                raise RagfunnelError(
                    f"cannot download {url} ({getattr(exc, 'reason', exc)}). Are you offline? "
                    "Use the corpus in ../shared/data/friends instead (ragfunnel index --data ../shared/data)."
                ) from None
            except json.JSONDecodeError:
                raise RagfunnelError(f"{url} did not return JSON; the file may have moved") from None
            tmp = target.with_suffix(".part")
            tmp.write_bytes(body)
            tmp.replace(target)
        written.append(target)
        if progress:
            progress(i, len(SEASONS))
    return written
