"""What a search service, a recorded run or a function can answer that ptah refuses: each a clear
exit with one sentence, never a traceback, never the key."""

from __future__ import annotations

import pytest

from tests.retriever.conftest import small_project


def run(cli, folder, *extra):
    return cli(
        "inference",
        "evaluate",
        "--spec",
        folder / "ptah.yaml",
        "--corpus",
        folder / "corpus.yaml",
        *extra,
    )


def endpoint(service) -> str:
    return f"http://127.0.0.1:{service.port}/search"


def test_the_service_is_asked_in_batches_and_measured(service, tmp_path, cli):
    folder = small_project(tmp_path, endpoint(service), batch_size=2)
    done = run(cli, folder, "--variant", "svc", "--json")
    assert done.code == 0, done.err
    # two requests in flight at once: in either order
    bodies = sorted(
        (request["body"] for request in service.requests),
        key=lambda body: body["queries"][0]["case"],
    )
    assert bodies == [
        {"queries": [{"case": "a", "query": "a", "k": 2}, {"case": "b", "query": "b", "k": 2}]},
        {"queries": [{"case": "c", "query": "ccb", "k": 2}]},
    ]
    assert "coverage and freshness are not verified for an outside retriever" in done.out


SERVICE = "the retriever service http://127.0.0.1:{port}/search"
REFUSED = "; the answer was refused and the run not measured"


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("nan", "answered a score that is not a finite number (NaN or infinity) (case a)"),
        ("duplicate", "answered the key '1' twice in one ranking (case a)"),
        (
            "number",
            "answered the key 1, which is not a string; write keys as the corpus spells them, "
            'e.g. "42" (case a)',
        ),
        (
            "rising",
            "answered scores that rise down the ranking (rank 2 scores above rank 1); send the keys "
            "best first (case a)",
        ),
        ("short", "answered 2 rankings for 3 queries"),
        ("other-case", "answered case zzz where case a was asked"),
        ("huge", "sent more than 1,050,112 bytes"),
        ("html", "answered text/html, not JSON (a proxy or a login page?)"),
    ],
)
def test_a_hostile_answer_is_refused_in_one_sentence(service, tmp_path, cli, mode, said):
    folder = small_project(tmp_path, endpoint(service))
    service.always = mode
    refused = run(cli, folder, "--variant", "svc")
    assert refused.code == 3
    sentence = SERVICE.format(port=service.port) + " " + said + REFUSED
    assert refused.err == sentence + "\n"


def test_a_slow_service_is_cut_at_its_whole_request_timeout(service, tmp_path, cli):
    folder = small_project(tmp_path, endpoint(service))
    service.always = "slow"
    refused = run(cli, folder, "--variant", "svc")
    assert refused.code == 3
    assert refused.err == (
        SERVICE.format(port=service.port)
        + " did not answer within timeout_s (1 s) to the one attempt; "
        "each retry re-sends work the server may still be doing, so try a smaller batch_size "
        "(now 16) or a larger timeout_s\n"
    )


@pytest.mark.parametrize(("mode", "key"), [("unknown", "'99'"), ("filtered", "'5'")])
def test_keys_that_are_no_row_of_the_table_are_exit_3_naming_them(
    service, tmp_path, cli, mode, key
):
    folder = small_project(tmp_path, endpoint(service))
    service.always = mode
    refused = run(cli, folder, "--variant", "svc")
    assert refused.code == 3
    assert refused.err == (
        f"the retriever (service {endpoint(service)}) answered keys that are no row of table docs: "
        f"{key} (case 'a'); its index has drifted from the table\n"
    )


def test_the_key_comes_from_its_variable_and_is_never_echoed(service, tmp_path, cli, monkeypatch):
    folder = small_project(tmp_path, endpoint(service), api_key_env="TEAM_SEARCH_KEY")
    unset = run(cli, folder, "--variant", "svc")
    assert unset.code == 2
    assert unset.err == (
        "variants.svc.options.api_key_env: the environment variable TEAM_SEARCH_KEY is not set; "
        "set it to the retriever service's key\n"
    )
    monkeypatch.setenv("TEAM_SEARCH_KEY", "s3cret-team-key")
    done = run(cli, folder, "--variant", "svc")
    assert done.code == 0, done.err
    assert service.requests[0]["authorization"] == "Bearer s3cret-team-key"
    service.always = "echo-key"
    refused = run(cli, folder, "--variant", "svc")
    assert refused.code == 3
    assert "s3cret" not in refused.err
    assert "bad key Bearer ***" in refused.err


def test_scores_are_optional(service, tmp_path, cli):
    folder = small_project(tmp_path, endpoint(service))
    service.always = "scoreless"
    done = run(cli, folder, "--variant", "svc", "--output", tmp_path / "r.json")
    assert done.code == 0, done.err
    import json

    (report_run,) = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert report_run["cases"][0]["results"] == [
        {"key": "1", "score": 1.0},
        {"key": "3", "score": 0.5},
    ]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            '{"case": "a", "keys": ["1", "3"], "scores": [0.9, NaN]}\n',
            "run.jsonl:1: holds a score that is not a finite number (NaN or infinity)",
        ),
        (
            '{"case": "a", "keys": ["1", "1"]}\n',
            "run.jsonl:1: holds the key '1' twice in one ranking",
        ),
        (
            '{"case": "a", "keys": ["1"]}\n{"case": "a", "keys": ["3"]}\n',
            "run.jsonl:2: case 'a' is ranked twice",
        ),
        (
            '{"case": "a", "keys": ["1"]}\n',
            "run.jsonl: ranks no case 'b', 'c'; record the run on this corpus",
        ),
        (
            "a Q0 1 1 0.9\n",
            "run.jsonl:1: a TREC run line is QID Q0 DOCNO RANK SCORE TAG, six fields",
        ),
        ("a Q0 1 first 0.9 t\n", "run.jsonl:1: RANK must be a whole number, SCORE a number"),
        ("{not json\n", "run.jsonl:1: is not a JSON object"),
    ],
)
def test_a_recorded_run_that_cannot_be_read_is_exit_2_naming_its_line(
    service, tmp_path, cli, text, said
):
    folder = small_project(tmp_path, endpoint(service))
    (folder / "run.jsonl").write_text(text)
    refused = run(cli, folder, "--variant", "rec")
    assert (refused.code, refused.err) == (2, said + "\n")


def test_a_trec_run_is_read_by_rank(service, tmp_path, cli):
    folder = small_project(tmp_path, endpoint(service))
    (folder / "run.jsonl").write_text(
        "a Q0 3 2 0.4 team\na Q0 1 1 0.9 team\nb Q0 3 1 0.8 team\nc Q0 4 1 0.7 team\n"
    )
    done = run(cli, folder, "--variant", "rec", "--output", tmp_path / "r.json")
    assert done.code == 0, done.err
    import json

    (report_run,) = json.loads((tmp_path / "r.json").read_text())["runs"]
    assert [[r["key"] for r in case["results"]] for case in report_run["cases"]] == [
        ["1", "3"],
        ["3"],
        ["4"],
    ]


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (
            {"batch": 3},
            "variants.svc.options: 'batch' is not a retriever option; write run, url, api_key_env, "
            "timeout_s, batch_size, max_concurrency",
        ),
        (
            {"run": "run.jsonl"},
            "variants.svc.options: write run: FILE (a recorded run) or url: URL (a service), one",
        ),
        (
            {"batch_size": 0},
            "variants.svc.options.batch_size: must be a whole number from 1 to 3,600, not 0",
        ),
    ],
)
def test_a_variants_options_are_checked_when_it_is_measured(service, tmp_path, cli, options, said):
    folder = small_project(tmp_path, endpoint(service), **options)
    refused = run(cli, folder, "--variant", "svc")
    assert (refused.code, refused.err) == (2, said + "\n")
    assert service.requests == []


def test_a_run_says_what_it_searched(service, tmp_path, cli):
    folder = small_project(tmp_path, endpoint(service))
    done = run(cli, folder, "--variant", "svc")
    assert done.code == 0, done.err
    header = next(line for line in done.out.splitlines() if line.startswith("generation svc"))
    assert header.endswith(
        f"model an outside retriever (service {endpoint(service)}), 4 rows, service ranked by "
        "the retriever"
    )


def test_record_run_is_refused_over_an_input_or_another_output_before_any_request(
    service, tmp_path, cli
):
    folder = small_project(tmp_path, endpoint(service))
    corpus = folder / "corpus.yaml"
    over_input = run(cli, folder, "--variant", "svc", "--record-run", corpus)
    assert over_input.code == 2
    assert over_input.err == (
        f"--record-run {corpus}: is the corpus this run reads ({corpus}); ptah never writes over "
        "an input, so give another path\n"
    )
    report = tmp_path / "r.json"
    twice = run(cli, folder, "--variant", "svc", "--record-run", report, "--output", report)
    assert (twice.code, twice.err) == (
        2,
        f"--output {report}: --record-run {report} writes there too; give each output a path of "
        "its own\n",
    )
    assert service.requests == []


def test_record_run_without_a_retriever_run_is_refused_before_any_work(service, tmp_path, cli):
    folder = small_project(tmp_path, endpoint(service))
    recorded = tmp_path / "recorded.jsonl"
    refused = run(cli, folder, "--channel", "lexical", "--record-run", recorded)
    assert (refused.code, refused.err) == (
        2,
        f"--record-run {recorded}: records the rankings of runs of channel retriever, and this "
        "evaluation has none; evaluate one, or leave --record-run out\n",
    )
    assert refused.out == ""  # nothing measured
    assert not recorded.exists()


def test_the_api_refuses_record_run_without_a_retriever_run_before_the_baseline_is_read(tmp_path):
    import ptah
    from ptah.core.errors import InputError

    folder = small_project(tmp_path, "http://127.0.0.1:9/unused")
    recorded = tmp_path / "recorded.jsonl"
    with ptah.open_project(folder / "ptah.yaml") as project:
        with pytest.raises(InputError) as raised:
            project.evaluate(
                folder / "corpus.yaml",
                channels=["lexical"],
                record_run=str(recorded),
                baseline=str(tmp_path / "no-such-report.json"),  # never read
            )
    assert str(raised.value) == (
        f"record_run={recorded}: records the rankings of runs of channel retriever, and this "
        "evaluation has none; evaluate one, or leave record_run out"
    )
    assert not recorded.exists()


@pytest.fixture
def clients(monkeypatch):
    """Every retriever client the evaluation makes, kept to be looked at after it."""
    from ptah.retriever import service as module

    made = []

    class Kept(module.RetrieverClient):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            made.append(self)

    monkeypatch.setattr(module, "RetrieverClient", Kept)
    return made


@pytest.mark.parametrize(("mode", "code"), [(None, 0), ("nan", 3), ("unknown", 3)])
def test_the_services_connections_are_closed_when_asked_answered_or_refused(
    service, tmp_path, cli, clients, mode, code
):
    folder = small_project(tmp_path, endpoint(service))
    service.always = mode
    done = run(cli, folder, "--variant", "svc")
    assert done.code == code, done.err
    assert len(service.requests) == 1
    assert [client.closed for client in clients] == [True]
