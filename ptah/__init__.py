"""ptah: keeps text-embedding generations of a database table and measures whether they work.

The public Python API (the CLI is its client)::

    import ptah

    with ptah.open_project("examples/support/ptah.yaml") as project:
        corpus = ptah.load_corpus("corpora/support.yaml")
        report = project.evaluate(corpus, generations=["title-body"],
                                  baseline="examples/support/baseline.json", max_drop={"recall": 0.02})
        report.verdict                            # "pass" | "fail" | "inconclusive"
        report.runs[0].means["nDCG"].value        # .high: every unjudged row in the top k relevant
        report.save("report.json")                # or save(PATH, "html"): ptah.render.formats

Names not in ``__all__`` are private.
"""

__version__ = "0.1.0"

# Names are imported when first used (PEP 562), so that ``ptah --help`` and ``ptah corpus …`` pay
# for nothing they do not use.
_WHERE = {
    "Project": "ptah._api", "Report": "ptah._api", "load_corpus": "ptah._api", "load_report": "ptah._api",
    "open_project": "ptah._api",
    "StatisticsSettings": "ptah.core.request",
    "Case": "ptah.core.corpus", "Corpus": "ptah.core.corpus",
    "CorpusError": "ptah.core.errors", "IncomparableBaseline": "ptah.core.errors", "InputError": "ptah.core.errors",
    "NotBuilt": "ptah.core.errors", "OperationalError": "ptah.core.errors", "PtahError": "ptah.core.errors",
    "SpecError": "ptah.core.errors", "StaleGeneration": "ptah.core.errors",
    "Measure": "ptah.core.measures",
    "Mean": "ptah.core.metrics",
    "CaseResult": "ptah.core.report", "Comparison": "ptah.core.report", "Gate": "ptah.core.report",
    "Run": "ptah.core.report",
    "EvaluationRequest": "ptah.core.request", "Fusion": "ptah.core.request", "SearchOptions": "ptah.core.request",
    "Spec": "ptah.core.spec",
}


def __getattr__(name: str):
    if name not in _WHERE:
        raise AttributeError(f"module 'ptah' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_WHERE[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Case",
    "CaseResult",
    "Comparison",
    "Corpus",
    "CorpusError",
    "EvaluationRequest",
    "Fusion",
    "Gate",
    "IncomparableBaseline",
    "InputError",
    "Mean",
    "Measure",
    "NotBuilt",
    "OperationalError",
    "Project",
    "PtahError",
    "Report",
    "Run",
    "SearchOptions",
    "Spec",
    "SpecError",
    "StaleGeneration",
    "StatisticsSettings",
    "__version__",
    "load_corpus",
    "load_report",
    "open_project",
]
