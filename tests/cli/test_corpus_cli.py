"""``ptah corpus validate`` / ``digest`` through the real entry point: exact output and exit
codes."""

from __future__ import annotations

import json

import pytest

GOOD = (
    'version: 1\ndefault_k: 5\ncases:\n  - {id: a, query: "How do I cancel?", required: ["17"]}\n'
)
# sha256sum of the canonical form {"cases":[{"forbidden":[],"id":"a","k":5,"query":"How do I
# cancel?","relevant":[["17",1.0]],"required":["17"]}],"format":"ptah-corpus@1"}
GOOD_DIGEST = "sha256:8516f4092c73267f4f2d1bbc6804856e6e6a199921e2b14851b4f31e0bc8c995"
BAD = 'version: 1\ndefault_k: 5\ncases:\n  - {id: a, query: "", requried: ["17"]}\n'


@pytest.fixture
def files(tmp_path):
    good = tmp_path / "good.yaml"
    good.write_text(GOOD)
    bad = tmp_path / "bad.yaml"
    bad.write_text(BAD)
    return good, bad


def test_digest_prints_the_digest(files, cli):
    good, _ = files
    code, out, err = cli("corpus", "digest", str(good))
    assert (code, out, err) == (0, GOOD_DIGEST + "\n", "")


def test_validate_reports_every_problem_of_every_file_and_exits_2(files, cli):
    good, bad = files
    code, out, err = cli("corpus", "validate", str(good), str(bad))
    assert code == 2
    assert out == f"{good}: valid, 1 cases, {GOOD_DIGEST}\n"
    assert err.splitlines() == [
        f'{bad}:4: case "a": requried: unknown field in a case; did you mean "required"?',
        f'{bad}:4: case "a": query: must be non-empty text, not the text ""',
        f'{bad}:4: case "a": declares neither required nor relevant; any answer would satisfy it, so name the keys a good result contains',
        "1 of 2 corpus files invalid",
    ]


def test_validate_json(files, cli):
    good, bad = files
    code, out, _ = cli("corpus", "validate", "--json", str(good), str(bad))
    assert code == 2
    report = json.loads(out)
    assert report["valid"] is False
    assert report["files"][0] == {
        "path": str(good),
        "valid": True,
        "digest": GOOD_DIGEST,
        "cases": 1,
        "problems": [],
    }
    assert report["files"][1]["valid"] is False
    assert report["files"][1]["problems"][0] == {
        "path": str(bad),
        "line": 4,
        "case": "a",
        "field": "requried",
        "message": 'unknown field in a case; did you mean "required"?',
    }


def test_validate_all_good_exits_0(files, cli):
    good, _ = files
    assert cli("corpus", "validate", str(good))[0] == 0


def test_digest_of_an_invalid_corpus_exits_2(files, cli):
    _, bad = files
    code, out, err = cli("corpus", "digest", str(bad))
    assert (code, out) == (2, "")
    assert err.startswith(f"{bad}:4: ")


def test_missing_file_exits_2_without_traceback(tmp_path, cli):
    code, _, err = cli("corpus", "digest", str(tmp_path / "none.yaml"))
    assert (code, err) == (2, f"{tmp_path / 'none.yaml'}: no such file\n")


def test_unknown_command_is_a_usage_error(cli):
    assert cli("corpus", "frobnicate")[0] == 2
