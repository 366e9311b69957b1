"""The chat judge against a local OpenAI-compatible server: every hole graded by the server's rule
into the record's models section; every wrong answer refused and counted, never recorded; a failing
server is exit 3 with nothing half-written."""

from __future__ import annotations

import json

from ptah.adapters.judgements_yaml import read_record
from ptah.adapters.judges.chat import PROMPT
from tests.conftest import run_cli
from tests.judges.chat_server import MODEL, rule
from tests.judges.conftest import KEY
from tests.services.conftest import DOCS, Workspace

QUERIES = {
    "billing": "cancel billing subscription",
    "password": "reset the password",
    "invoices": "export invoices",
    "tokens": "developer tokens",
}


def judge(capsys, space, *extra, name: str = "gpt"):
    return run_cli(
        capsys,
        "corpus",
        "judge-model",
        space.folder / "c.yaml",
        name,
        "--spec",
        space.spec_path,
        "-g",
        "docs",
        *extra,
    )


def holes(capsys, space) -> list[tuple[str, str]]:
    code, out, err = run_cli(
        capsys,
        "corpus",
        "holes",
        space.folder / "c.yaml",
        "--spec",
        space.spec_path,
        "-g",
        "docs",
        "--json",
    )
    assert code == 0, err
    return sorted(
        (case["id"], hole["key"]) for case in json.loads(out)["cases"] for hole in case["holes"]
    )


def expected(pair: tuple[str, str]) -> float:
    row = DOCS[int(pair[1]) - 1]
    return float(rule(f"Query:\n{QUERIES[pair[0]]}\n\nRow text:\n{Workspace.judging_text(row)}"))


def model_grades(space, name: str = "gpt") -> dict[tuple[str, str], float]:
    """The grades of the record's one model judge, which must be ``name``."""
    record = read_record(space.folder / "c.yaml")
    (by,) = record.models
    assert by.startswith(f"model:{name}@sha256:")
    return {
        (case_id, key): j.grade
        for case_id, keys in record.models[by].items()
        for key, j in keys.items()
    }


def test_every_hole_is_graded_by_the_servers_rule_into_the_models_section(
    judged_space, chat_server, capsys
):
    before = (judged_space.folder / "c.yaml").read_bytes()
    pairs = holes(capsys, judged_space)
    assert len(pairs) == 8
    code, out, err = judge(capsys, judged_space)
    assert code == 0, err
    grades = model_grades(judged_space)
    assert grades == {pair: expected(pair) for pair in pairs}
    relevant = sum(1 for grade in grades.values() if grade > 0)
    assert 0 < relevant < len(pairs)  # the rule says both
    assert (
        f"8 pairs (holes and sampled keys); 8 graded now ({relevant} relevant), 0 graded before"
        in out
    )
    assert (
        "usage: requests 8, retries 0, pairs 8, server_prompt_tokens 80, server_completion_tokens 24"
        in out
    )
    assert (judged_space.folder / "c.yaml").read_bytes() == before  # never the corpus
    assert holes(capsys, judged_space) == pairs  # a model's grade never makes a row judged
    body, headers = chat_server.requests[0]
    assert body["model"] == MODEL and body["temperature"] == 0
    assert body["messages"][0] == {"role": "system", "content": PROMPT}
    assert body["messages"][1]["content"].startswith("Grades: 0, 1\n\nQuery:\n")
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert KEY not in (judged_space.folder / "c.judged.yaml").read_text() + out + err
    spent = {
        "requests": 8,
        "retries": 0,
        "pairs": 8,
        "server_prompt_tokens": 80,
        "server_completion_tokens": 24,
        "refused": 0,
    }
    (by,) = read_record(judged_space.folder / "c.yaml").usage
    assert dict(read_record(judged_space.folder / "c.yaml").usage[by]) == spent
    # a second run asks nothing: every pair was graded on the same text, and it cost nothing
    chat_server.reset()
    code, out, _ = judge(capsys, judged_space)
    assert code == 0 and chat_server.requests == []
    assert "0 graded now (0 relevant), 8 graded before on the same text, 0 answers refused" in out
    assert dict(read_record(judged_space.folder / "c.yaml").usage[by]) == spent


def test_every_wrong_answer_is_refused_counted_and_never_recorded(
    judged_space, chat_server, capsys
):
    chat_server.faults = ["malformed", "offscale", "extra", "renamed", "fenced", "429"]
    code, out, err = judge(capsys, judged_space)
    assert code == 0, err
    assert "4 graded now (" in out
    assert (
        "4 answers refused (1 a grade off the corpus's scale, 1 answered by model "
        '"other-model", not "judge-1", 1 not a JSON object, 1 not exactly {"grade": G})'
    ) in out
    assert "usage: requests 9, retries 1," in out  # the 429 was retried and then answered
    pairs = holes(capsys, judged_space)
    grades = model_grades(judged_space)
    assert len(grades) == 4 and all(grade == expected(pair) for pair, grade in grades.items())
    assert (
        len([pair for pair in pairs if pair not in grades]) == 4
    )  # the refused ones, asked again next time
    chat_server.reset()
    code, out, _ = judge(capsys, judged_space)
    assert (
        code == 0
        and "4 graded now" in out
        and "4 graded before" in out
        and len(chat_server.requests) == 4
    )
    assert model_grades(judged_space) == {pair: expected(pair) for pair in pairs}
    (spent,) = read_record(judged_space.folder / "c.yaml").usage.values()
    assert (spent["requests"], spent["retries"], spent["pairs"], spent["refused"]) == (
        9 + 4,
        1,
        8 + 4,
        4,
    )


def test_a_failing_server_is_exit_3_in_one_sentence_with_nothing_half_written(
    judged_space, chat_server, capsys
):
    for mode, said in (
        ("500", "answered HTTP 500 (broken) to all 3 attempts"),
        ("notchat", "answered JSON that is not a chat completion"),
        ("twice", 'answered JSON naming the key "grade" twice'),
        ("drip", "did not answer within timeout_s (2 s) to all 3 attempts"),
    ):
        chat_server.reset()
        chat_server.always = mode
        code, out, err = judge(capsys, judged_space)
        assert code == 3, (mode, err)
        assert said in err and err.count("\n") == 1 and "Traceback" not in err
        assert not read_record(
            judged_space.folder / "c.yaml"
        ).models  # nothing graded, no grade written
    (spent,) = read_record(judged_space.folder / "c.yaml").usage.values()
    assert (
        spent["requests"] == 3 + 1 + 1 + 3
    )  # what failures cost is kept: 500 x 3 attempts, 2 answers, 3 drips


def test_the_spend_cap_leaves_the_rest_for_another_run(judged_space, chat_server, capsys):
    spec = judged_space.spec_path
    spec.write_text(spec.read_text().replace("max_requests: 100", "max_requests: 3"))
    code, out, err = judge(capsys, judged_space)
    assert code == 0, err
    assert "3 graded now" in out and "5 left for another run (max_requests)" in out
    assert len(chat_server.requests) == 3 and len(model_grades(judged_space)) == 3


def test_a_missing_key_or_judge_is_exit_2_before_any_request(
    judged_space, chat_server, capsys, monkeypatch
):
    monkeypatch.delenv("JUDGE_KEY")
    code, _, err = judge(capsys, judged_space)
    assert code == 2 and "the environment variable JUDGE_KEY that should hold the key" in err
    code, _, err = run_cli(
        capsys,
        "corpus",
        "judge-model",
        judged_space.folder / "c.yaml",
        "nobody",
        "--spec",
        judged_space.spec_path,
    )
    assert code == 2 and 'no judge "nobody" under judges: (declared: gpt)' in err
    assert chat_server.requests == []


def test_the_old_spelling_judge_dash_dash_judge_still_grades_and_keeps_stdout_json(
    judged_space, chat_server, capsys
):
    code, out, err = judge(capsys, judged_space, "--json")
    assert code == 0 and "deprecated" not in err, err
    first = json.loads(out)
    assert (first["pairs"], first["graded"], first["kept"]) == (8, 8, 0)
    code, out, err = run_cli(
        capsys,
        "corpus",
        "judge",
        judged_space.folder / "c.yaml",
        "--spec",
        judged_space.spec_path,
        "--judge",
        "gpt",
        "-g",
        "docs",
        "--json",
    )
    assert code == 0, err
    assert err.splitlines()[0] == (
        "deprecated: ptah corpus judge --judge --json goes in the next release; use ptah corpus "
        "judge-model CORPUS NAME"
    )
    again = json.loads(out)  # the deprecation is on stderr: stdout is the JSON alone
    assert (again["pairs"], again["graded"], again["kept"]) == (8, 0, 8)
    assert again["record"] == first["record"] == str(judged_space.folder / "c.judged.yaml")
    assert len(chat_server.requests) == 8  # the second run asked nothing: graded on the same text
