"""The user's documents: every relative link and anchor resolves, the README stays a short guide, and
docs/ARCHITECTURE.md's stage graph names every rule of the workflow."""

import re

import pytest
from conftest import REPO

from clipeval.tasks import TASKS

DOCUMENTS = sorted(
    [REPO / "README.md", REPO / "CHANGELOG.md", REPO / "config/README.md", *(REPO / "docs").glob("*.md")]
)
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6}) +(.+?) *#*$", re.M)
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
COMMIT = re.compile(r"\bcommits? +[0-9a-f]{7,40}\b")


def without_code_blocks(text):
    return FENCE.sub("", text)


def anchor(heading):
    """GitHub's anchor for a heading: lower case, punctuation other than - and _ dropped, spaces to -."""
    text = re.sub(r"`|\*\*|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(path):
    seen, names = {}, set()
    for _, heading in HEADING.findall(without_code_blocks(path.read_text(encoding="utf-8"))):
        name = anchor(heading)
        count = seen.get(name, 0)
        seen[name] = count + 1
        names.add(name if count == 0 else f"{name}-{count}")
    return names


def relative_links(path):
    for target in LINK.findall(without_code_blocks(path.read_text(encoding="utf-8"))):
        if not re.match(r"[a-z]+:", target):
            yield target


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda path: str(path.relative_to(REPO)))
def test_every_relative_link_and_anchor_resolves(document):
    broken = []
    for target in relative_links(document):
        file_part, _, fragment = target.partition("#")
        linked = (document.parent / file_part).resolve() if file_part else document
        if not linked.exists():
            broken.append(f"{target}: no such file")
        elif fragment and linked.suffix == ".md" and fragment not in anchors(linked):
            broken.append(f"{target}: no heading with anchor #{fragment}")
    assert not broken, f"{document.relative_to(REPO)}: " + "; ".join(broken)


def test_the_link_checker_finds_a_broken_file_and_a_broken_anchor(tmp_path):
    (tmp_path / "other.md").write_text("# Other page\n\n## On a GPU host\n")
    page = tmp_path / "page.md"
    page.write_text(
        "[a](other.md#on-a-gpu-host) [b](missing.md) [c](other.md#nope) [d](#local)\n\n"
        "```\n[e](ignored-in-code.md)\n```\n\n## Local\n"
    )
    assert list(relative_links(page)) == ["other.md#on-a-gpu-host", "missing.md", "other.md#nope", "#local"]
    assert anchors(tmp_path / "other.md") == {"other-page", "on-a-gpu-host"}
    assert anchor("`make test` and **the** [suite](x.md): 2 tiers") == "make-test-and-the-suite-2-tiers"


def test_the_readme_is_a_short_guide_without_commit_hashes():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 200
    for document in DOCUMENTS:
        assert not COMMIT.search(document.read_text(encoding="utf-8")), document


RULE = re.compile(r"^(?:rule|checkpoint) (\w+):", re.M)


def stage_graph_names(text):
    """The words of the first code block under "## The stage graph"."""
    section = text.split("## The stage graph", 1)[1]
    return set(re.findall(r"\w+", FENCE.search(section).group(0)))


def test_the_stage_graph_names_every_rule():
    rules = {name for path in (REPO / "workflow/rules").glob("*.smk") for name in RULE.findall(path.read_text())}
    # prepare.smk defines one checkpoint per source format in a loop, each named prepare_FORMAT
    assert 'f"prepare_{prepared_format.name}"' in (REPO / "workflow/rules/prepare.smk").read_text()
    rules.add("prepare")
    # score.smk and report.smk make each task's score and report rules from its record, by the names it gives
    assert 'f"score_{task.name}"' in (REPO / "workflow/rules/score.smk").read_text()
    assert "job.rule" in (REPO / "workflow/rules/report.smk").read_text()
    rules |= {f"score_{task.name}" for task in TASKS.values()}
    rules |= {job.rule for task in TASKS.values() for job in task.report_jobs}
    assert len(rules) > 20 and rules - stage_graph_names((REPO / "docs/ARCHITECTURE.md").read_text()) == set()


def test_the_changelog_has_one_line_entries_under_unreleased_and_versions():
    lines = (REPO / "CHANGELOG.md").read_text(encoding="utf-8").splitlines()
    releases = [line for line in lines if line.startswith("## ")]
    assert releases[0] == "## Unreleased" and len(releases) > 1
    assert all(re.fullmatch(r"## \d+\.\d+\.\d+ — \d{4}-\d\d-\d\d", release) for release in releases[1:])
    entries = lines[lines.index(releases[0]) :]
    assert [line for line in entries if line and not line.startswith(("#", "- "))] == []
