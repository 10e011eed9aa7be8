"""The docs are held to the code: every citation of a doc's section names a heading that exists,
the design is cited only through docs/design.md, and the README's counts come from the spec."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tools.tlc import read_cfg

ROOT = Path(__file__).resolve().parents[1]
# the files a citation may sit in: what git tracks, as text (generated code cites nothing)
SUFFIXES = {".py", ".md", ".tla", ".cfg", ".yaml", ".yml", ".proto", ".toml", ".j2", ".json"}
# `docs/x.md, "Heading"` (or `x.md, "Heading"` inside docs/), possibly broken over lines
CITATION = re.compile(r"((?:[\w.-]+/)*[\w.-]+\.md),\s+\"([^\"]+)\"")
# a comment's continuation marker between the two halves of a citation broken over lines
CONTINUATION = re.compile(r"\s*\n\s*(?:#|//|\\\*|\*)?\s*")
# the seam of two Python string literals that continue each other over lines ("..."\n'...')
LITERAL_SEAM = re.compile(r"[\"']\s*\n\s*[\"']")


def _tracked() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    return [
        ROOT / name
        for name in out.splitlines()
        if Path(name).suffix in SUFFIXES
        and not name.startswith("aegis/generated/")
        and (ROOT / name).is_file()
    ]


def _held() -> list[Path]:
    """The tracked files the citation rules hold (not this file, which names the patterns)."""
    return [path for path in _tracked() if path.name != "test_docs.py"]


def _headings(doc: Path) -> list[str]:
    """A Markdown file's headings (outside code blocks), without the `#`s and backquotes."""
    headings, fenced = [], False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"#{1,6} (.+)", line)):
            headings.append(m.group(1).replace("`", "").strip())
    return headings


def _resolves(cited: str, headings: list[str]) -> bool:
    """A heading equal to the citation, or whose title before a `:` or a `(` is."""
    cited = cited.replace("`", "").strip()
    return any(cited in (h, re.split(r":\s| \(", h, maxsplit=1)[0]) for h in headings)


def _target(source: Path, cited: str) -> Path | None:
    for candidate in (ROOT / cited, source.parent / cited, ROOT / "docs" / cited):
        if candidate.is_file():
            return candidate
    return None


def _citations() -> list[tuple[str, Path, str]]:
    found = []
    for path in _held():
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".py":
            text = LITERAL_SEAM.sub("", text)
        text = CONTINUATION.sub(" ", text)
        for m in CITATION.finditer(text):
            found.append((str(path.relative_to(ROOT)), Path(m.group(1)), m.group(2)))
    return found


def test_citations_are_found() -> None:
    # the citations this test knows to exist: a regex that finds none would pass vacuously
    cited = {(str(doc), heading) for _, doc, heading in _citations()}
    assert ("docs/kubernetes.md", "Job size") in cited, sorted(cited)[:20]
    assert any(doc.endswith("design.md") for doc, _ in cited), sorted(cited)[:20]


def test_every_cited_section_is_a_heading_of_its_doc() -> None:
    bad = []
    for source, doc, heading in _citations():
        target = _target(ROOT / source, str(doc))
        if target is None:
            bad.append(f"{source}: {doc} does not exist")
        elif not _resolves(heading, _headings(target)):
            bad.append(f'{source}: {doc} has no heading "{heading}"')
    assert not bad, "\n".join(bad)


def test_a_heading_is_matched_whole_words_only() -> None:
    headings = ["Job Controller (`aegis/k8s/job_controller.py`)", "Long logs: in parts"]
    assert _resolves("Job Controller", headings) and _resolves("Long logs", headings)
    assert not _resolves("Job Control", headings) and not _resolves("Long", headings)
    assert not _resolves("in parts", headings)


def test_the_design_is_cited_by_its_headings_not_by_section_numbers() -> None:
    """`design §N` named the sections of a document outside the repository."""
    left = [
        f"{path.relative_to(ROOT)}:{n}"
        for path in _held()
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").split("\n"), 1)
        if "design §" in line
    ]
    assert not left, left


def test_no_doc_or_source_points_to_a_pass_of_a_doc() -> None:
    """History stays in git: docs and comments cite what the system is, not a dated pass."""
    ordinal = (
        r"(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth"
        r"|\w+teenth|\d+(st|nd|rd|th))"
    )
    pattern = re.compile(rf"\.md,?\s+\"?{ordinal} pass", re.IGNORECASE)
    left = [
        str(path.relative_to(ROOT))
        for path in _held()
        if pattern.search(CONTINUATION.sub(" ", path.read_text(encoding="utf-8")))
    ]
    assert not left, left


def _cfg_counts() -> tuple[int, int]:
    """The CI model's invariants, and its action properties (every property but liveness)."""
    config = read_cfg(ROOT / "spec" / "AegisPhase.cfg")
    return len(config.invariants), len([p for p in config.properties if p != "Termination"])


def test_the_readme_says_how_many_invariants_and_properties_tlc_checks() -> None:
    invariants, properties = _cfg_counts()
    assert invariants >= 9 and properties >= 1  # the cfg was read
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    m = re.search(r"TLC checks (\d+) invariants, (\d+) action properties", readme)
    assert m, "README.md's spine must say 'TLC checks N invariants, M action properties'"
    assert (int(m.group(1)), int(m.group(2))) == (invariants, properties), m.group(0)


@pytest.mark.parametrize("doc", ["spec/README.md"])
def test_the_spec_readme_counts_what_the_cfg_checks(doc: str) -> None:
    invariants, properties = _cfg_counts()
    text = (ROOT / doc).read_text(encoding="utf-8")
    row = r"\| `AegisPhase\.tla` \|[^|]*?(\d+) invariants[^|]*?(\d+) action properties"
    m = re.search(row, text)
    assert m, f"{doc}'s file table must count the invariants and action properties"
    assert (int(m.group(1)), int(m.group(2))) == (invariants, properties), m.group(0)
