"""The project's own docs are what its code cites: every render rule, requirement and
section a comment names is an anchor in docs/ (rendering.md, events.md, PERFORMANCE.md,
SECURITY.md, SCALING.md), and no file cites the spec kept outside the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
#: What is code, and so must cite docs/: the app, its tests, benchmarks, scripts, the
#: project, the client package, the example runtime.
CODE = ("chatui", "tests", "bench", "scripts", "config", "clients", "examples")
SUFFIXES = {".py", ".html", ".js", ".css", ".sh", ".toml"}
#: Captured data, not code: recorded as it was written.
NOT_CODE = ("tests/fixtures/",)

RULE_ID = re.compile(r"\b(?:[RGTSWLA][0-9]{1,2}|SEC[0-9]|REL[0-9])\b")
DOC_LINK = re.compile(r"docs/([A-Za-z_-]+\.md)#([a-z0-9-]+)")


def code_files() -> list[Path]:
    files = [ROOT / "Makefile"]
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*")):
            where = str(path.relative_to(ROOT))
            if path.suffix in SUFFIXES and not where.startswith(NOT_CODE) and path.is_file():
                files.append(path)
    return files


def anchors(doc: str) -> set[str]:
    """Explicit `<a id>` anchors and GitHub's slugs of the headings."""
    text = (DOCS / doc).read_text()
    found = set(re.findall(r'<a id="([^"]+)"', text))
    for heading in re.findall(r"^#+ (.+)$", text, re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")
        found.add(slug)
    return found


def test_no_file_cites_the_spec_outside_the_repository():
    citing = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in code_files()
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1)
        if re.search(r"\bSPEC\b", line) and "test_docs.py" not in path.name
    ]
    assert citing == []


def test_every_docs_link_in_the_code_is_an_anchor_of_that_doc():
    missing = sorted(
        {
            f"docs/{doc}#{anchor}"
            for path in code_files()
            for doc, anchor in DOC_LINK.findall(path.read_text(errors="replace"))
            if not (DOCS / doc).exists() or anchor not in anchors(doc)
        }
    )
    assert missing == []


def test_every_rule_id_the_app_cites_is_in_the_docs():
    documented = anchors("rendering.md") | anchors("events.md")
    cited = {
        rule.lower()
        for path in code_files()
        if str(path.relative_to(ROOT)).startswith("chatui/")
        for rule in RULE_ID.findall(path.read_text(errors="replace"))
    }
    assert cited - documented == set()


def test_the_docs_check_sees_a_missing_anchor_and_a_spec_citation(tmp_path):
    assert "g14" in anchors("rendering.md") and "g99" not in anchors("rendering.md")
    assert DOC_LINK.findall("see docs/rendering.md#g14") == [("rendering.md", "g14")]
    assert re.search(r"\bSPEC\b", "(SPEC §4.2 G14)")
