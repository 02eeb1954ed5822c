"""The screening cache's entries: what a reading of a pack recalls is what was saved."""

from __future__ import annotations

from pmos.gate.screen import KitScreen
from pmos.store import screencache

SHA = "ab" * 32


def test_a_pack_checked_in_part_recalls_exactly_the_lines_checked(kit):
    """Lines checked are kept as runs of numbers; a reading gets back each line
    checked and no other, with the failures as saved, and such a pack is not
    recalled as clean."""
    screen = KitScreen(kit)
    checked = [9, 2, 3, 5, 6, 7, 3]
    failed = {6: ("ev-1", "signature", "no signature")}
    screencache.save(kit.root, SHA, screen, failed, checked)
    assert screencache.load(kit.root, SHA, screen) == ({2, 3, 5, 6, 7, 9}, failed)
    assert not screencache.clean(kit.root, SHA, screen, 8)


def test_a_pack_is_clean_only_when_every_line_was_checked_and_none_fails(kit):
    screen = KitScreen(kit)
    screencache.save(kit.root, SHA, screen, {}, list(range(2, 12)))  # ten record lines
    assert screencache.load(kit.root, SHA, screen) == (set(range(2, 12)), {})
    assert screencache.clean(kit.root, SHA, screen, 10)
    assert not screencache.clean(kit.root, SHA, screen, 11)  # a line never checked
    assert not screencache.clean(kit.root, SHA, screen, 9)
    screencache.save(kit.root, SHA, screen, {4: (None, "schema", "bad")}, list(range(2, 12)))
    assert not screencache.clean(kit.root, SHA, screen, 10)
    assert not screencache.clean(kit.root, "cd" * 32, screen, 10)  # no entry: a miss
