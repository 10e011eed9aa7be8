"""The generated package for fixtures/Jobs.tla equals the committed golden files.

Refresh after an intended change with: AEGIS_UPDATE_GOLDEN=1 pytest tests/codegen
"""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.codegen.conftest import Build

GOLDEN = Path(__file__).parent / "golden" / "jobs"


def test_jobs_matches_golden(build: Build) -> None:
    files = build("Jobs").gen.files
    if os.environ.get("AEGIS_UPDATE_GOLDEN"):
        GOLDEN.mkdir(parents=True, exist_ok=True)
        for old in GOLDEN.glob("*.py"):
            old.unlink()
        for name, text in files.items():
            (GOLDEN / name).write_text(text, encoding="utf-8")
    assert sorted(p.name for p in GOLDEN.glob("*.py")) == sorted(files)
    for name, text in sorted(files.items()):
        want = (GOLDEN / name).read_text(encoding="utf-8")
        diff = "".join(
            difflib.unified_diff(want.splitlines(True), text.splitlines(True), "golden", "now")
        )
        assert text == want, f"{name} differs from the golden file:\n{diff}"


def test_every_file_has_the_header(build: Build) -> None:
    for text in build("Jobs").gen.files.values():
        first = text.splitlines()[0]
        assert first == "# Generated from tests/codegen/fixtures/Jobs.tla by codegen — do not edit."


def test_generation_does_not_depend_on_hash_seed(
    build: Build, fixtures_dir: Path, tmp_path: Path
) -> None:
    spec = fixtures_dir / "Jobs.tla"
    code = "import sys; from pathlib import Path; from codegen.pipeline import generate, write; "
    code += "write(generate(Path(sys.argv[1])), Path(sys.argv[2]))"
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    subprocess.run([sys.executable, "-c", code, str(spec), str(tmp_path)], check=True, env=env)
    for name, text in build("Jobs").gen.files.items():
        assert (tmp_path / "jobs" / name).read_text(encoding="utf-8") == text
