"""A saved report re-rendered by ``report show --markdown``: its free-text fields stay code, never
HTML or links.

The report schema types a gate's ``name`` and the report's ``created_at`` only
as strings, and the self-consistency checks do not read them, so a hand-edited
(or hostile) report file can hold Markdown or HTML there.
"""

from __future__ import annotations

import json
import re

from tests.cli.ci_project import make_ci_project
from tests.cli.test_ci_outputs import ptah
from tests.hostile.test_workflow_commands import outside_code_spans

HOSTILE = "x <img src=https://evil.example/p.png> [go](https://evil.example)"


def test_a_saved_reports_gate_name_and_created_at_stay_in_code_spans(tmp_path):
    folder = make_ci_project(tmp_path)
    data = json.loads((folder / "base.json").read_text())
    data["created_at"] = HOSTILE
    data["gates"][0]["name"] = HOSTILE
    (folder / "hostile.json").write_text(json.dumps(data))
    code, _out, _err = ptah(
        "report", "show", folder / "hostile.json", "--markdown", folder / "r.md"
    )
    assert code == 0
    text = (folder / "r.md").read_text()
    shown = [line for line in text.splitlines() if "evil.example" in line]
    assert len(shown) == 2
    assert all(f"`{HOSTILE}`" in line for line in shown)
    assert not any(
        re.search(r"evil\.example|<img|\]\(", outside_code_spans(line)) for line in shown
    )
