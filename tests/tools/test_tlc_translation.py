"""PlusCal translation: staleness check and in-place refresh."""

from __future__ import annotations

from pathlib import Path

import pytest

from aegis.errors import SpecError
from tools.tlc import check_translation, translate


def test_committed_fixture_is_current(twoprocs: Path) -> None:
    check_translation(twoprocs)
    assert translate(twoprocs) is False


def test_edited_pluscal_is_stale_until_translated(twoprocs: Path) -> None:
    text = twoprocs.read_text()
    twoprocs.write_text(text.replace("count := count + 1;", "count := count + 2;"))
    with pytest.raises(SpecError, match=r"TwoProcs\.tla: the PlusCal translation is stale; run"):
        check_translation(twoprocs)
    assert translate(twoprocs) is True
    assert "count' = count + 2" in twoprocs.read_text()
    check_translation(twoprocs)
    # the translator ran in a temp dir: no .old, no rewritten .cfg
    assert sorted(p.name for p in twoprocs.parent.iterdir()) == ["TwoProcs.cfg", "TwoProcs.tla"]
    assert (twoprocs.parent / "TwoProcs.cfg").read_text().startswith("\\* Two model-value")


def test_whitespace_only_changes_are_not_stale(twoprocs: Path) -> None:
    text = twoprocs.read_text()
    twoprocs.write_text(text.replace("vars == << count, pc >>", "vars ==   << count,\n pc >>"))
    check_translation(twoprocs)


def test_hand_edited_translation_is_stale(twoprocs: Path) -> None:
    text = twoprocs.read_text()
    twoprocs.write_text(text.replace("count' = count + 1", "count' = count + 3"))
    with pytest.raises(SpecError, match="stale"):
        check_translation(twoprocs)


def test_pluscal_syntax_error_names_the_line(twoprocs: Path) -> None:
    text = twoprocs.read_text()
    twoprocs.write_text(text.replace("  Rest:", "  Done:"))
    with pytest.raises(
        SpecError, match=r"TwoProcs\.tla:15:3: PlusCal: Cannot use `Done' as a label"
    ):
        check_translation(twoprocs)


def test_spec_without_pluscal_needs_no_translation(fixtures: Path) -> None:
    check_translation(fixtures / "Counter.tla")
