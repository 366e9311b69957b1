"""Every file a command writes ends its output with ``wrote FILE``; on stderr when stdout is a
--json document."""

from __future__ import annotations

import json

from tests.services.test_baseline_provenance import CORPUS


def test_evaluate_says_each_file_it_wrote_last_and_keeps_json_stdout_clean(workspace, cli):
    (workspace.folder / "corpus.yaml").write_text(CORPUS)
    assert cli("inference", "build", "--spec", workspace.spec_path, "--quiet")[0] == 0
    files = [workspace.folder / name for name in ("r.json", "r.html", "r.trec")]
    options = ["--output", files[0], "--html", files[1], "--trec-run", files[2]]
    base = [
        "inference",
        "evaluate",
        "--spec",
        workspace.spec_path,
        "--corpus",
        workspace.folder / "corpus.yaml",
    ]
    code, out, err = cli(*base, *options)
    assert (code, err) == (0, "")
    assert out.splitlines()[-3:] == [f"wrote {path}" for path in files]
    code, out, err = cli(*base, *options, "--json")
    assert (code, err) == (0, "".join(f"wrote {path}\n" for path in files))
    assert json.loads(out)["verdict"] == "pass"


def test_export_qrels_says_where_the_judgements_went(workspace, cli):
    (workspace.folder / "corpus.yaml").write_text(CORPUS)
    target = workspace.folder / "qrels.txt"
    code, out, err = cli("corpus", "export-qrels", workspace.folder / "corpus.yaml", target)
    assert (code, out, err) == (0, f"wrote {target} (2 judgements)\n", "")
