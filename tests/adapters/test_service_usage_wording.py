"""A service build's usage says whose count is whose: ptah's texts and characters, the server's
prompt tokens, and waits summed over the concurrent requests."""

from __future__ import annotations

import json
import re

from tests.adapters.test_openai_embedder import KEY, fast_policy, local, run, server  # noqa: F401
from tests.adapters.test_openai_probe import BATCH, ROWS, project  # noqa: F401


def test_the_build_line_names_the_servers_token_count_and_says_waits_are_summed(
    project, server, capsys
):  # noqa: F811
    code, out = run(["inference", "build", "served", "--spec", project / "ptah.yaml"], capsys)
    assert code == 0, out
    inputs = [text for request in server.requests for text in request["body"]["input"]]
    assert len(inputs) == ROWS + 1  # the probe, then every row
    tail = out.rstrip("\n").split("; service: ", 1)[1]
    waits = re.fullmatch(
        rf"{1 + -(-ROWS // BATCH)} requests \(0 retries\), {ROWS + 1} texts of {sum(map(len, inputs)):,} characters "
        rf"\(the server counted {sum(len(text.split()) for text in inputs):,} prompt tokens\), "
        r"(\d+\.\d) s waiting, summed over up to 4 concurrent requests",
        tail,
    )
    assert waits is not None, tail


def test_the_json_usage_keeps_both_counts_under_their_own_names(project, server, capsys):  # noqa: F811
    code, out = run(
        ["inference", "build", "served", "--spec", project / "ptah.yaml", "--json"], capsys
    )
    assert code == 0, out
    usage = json.loads(out)["usage"]
    inputs = [text for request in server.requests for text in request["body"]["input"]]
    assert {
        key: usage[key]
        for key in ("texts", "characters", "server_prompt_tokens", "max_concurrency")
    } == {
        "texts": ROWS + 1,
        "characters": sum(map(len, inputs)),
        "server_prompt_tokens": sum(len(text.split()) for text in inputs),
        "max_concurrency": 4,
    }
    assert "input_tokens" not in usage
