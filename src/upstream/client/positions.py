"""The position of the last write to each server, kept between commands (issue 40).

A server answers every write with the change-log position it committed at (a publishing front
with its events' Kafka offsets); a read that sends it back is answered only once that
server's view includes the write. The command line runs
each command in a process of its own, so `upstream ingest --url …` followed by `upstream
lineage --url …` carries the position through this small file: a user reads what they just
wrote, whichever server process answers.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def default_path() -> Path:
    """`$XDG_STATE_HOME/upstream/positions.json` (`~/.local/state` when unset)."""
    state = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(state) / "upstream" / "positions.json"


class PositionFile:
    """The newest position written to each server URL. The file is a convenience: one that
    cannot be read or written is treated as empty, never as an error of the command."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or default_path()

    def get(self, url: str) -> str | None:
        """The position kept for `url`, as the header sends it."""
        found = self._read().get(url)
        if isinstance(found, int):  # kept by an older version
            return str(found)
        return found if isinstance(found, str) else None

    def put(self, url: str, position: str) -> None:
        """Remember `position` for `url` (it replaces an older one; a store started afresh
        gives smaller positions again, so it is not merely the larger of the two)."""
        positions = self._read()
        positions[url] = position
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.NamedTemporaryFile(
                "w", dir=self.path.parent, delete=False, suffix=".tmp"
            ) as handle:
                json.dump(positions, handle)
            os.replace(handle.name, self.path)  # readers see the old file or the new one
        except OSError:
            return

    def forget(self, url: str) -> None:
        positions = self._read()
        if positions.pop(url, None) is not None:
            try:
                self.path.write_text(json.dumps(positions))
            except OSError:
                return

    def _read(self) -> dict[str, object]:
        try:
            positions = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return positions if isinstance(positions, dict) else {}
