"""remove_many: folded files deleted in one loop, or among threads when deletions wait."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pmos.store import files


def _files(folder: Path, count: int) -> list[Path]:
    folder.mkdir()
    paths = [folder / f"{i:05d}.json" for i in range(count)]
    for path in paths:
        path.write_bytes(b"x\n")
    return paths


@pytest.mark.parametrize("waits", [True, False], ids=["threads", "one-loop"])
def test_every_file_is_deleted_and_missing_ones_are_fine(tmp_path, monkeypatch, waits):
    """Deletions that wait (as on a journal) go to threads, others stay in one
    loop: either way every file goes, and one already gone is no error."""
    monkeypatch.setattr(files, "PROBE", 8)
    monkeypatch.setattr(files, "WAITED_S", 0.0 if waits else 10.0)
    started: list[object] = []

    class Counted(threading.Thread):
        def start(self) -> None:
            started.append(self)
            super().start()

    monkeypatch.setattr(threading, "Thread", Counted)
    folder = tmp_path / "folded"
    paths = _files(folder, 100)
    paths[50].unlink()
    files.remove_many(folder, paths)
    assert list(folder.iterdir()) == []
    assert len(started) == (files.REMOVERS if waits else 0)


@pytest.mark.parametrize("waits", [True, False], ids=["threads", "one-loop"])
def test_a_file_that_cannot_be_deleted_is_raised_after_the_rest(tmp_path, monkeypatch, waits):
    monkeypatch.setattr(files, "PROBE", 8)
    monkeypatch.setattr(files, "WAITED_S", 0.0 if waits else 10.0)
    folder = tmp_path / "folded"
    paths = _files(folder, 60)
    stuck = folder / "a-folder"
    stuck.mkdir()
    with pytest.raises(IsADirectoryError):
        files.remove_many(folder, [*paths[:30], stuck, *paths[30:]])
    assert stuck.exists()
    assert all(not p.exists() for p in paths[:30])  # deleted before the error
