"""ptah: keeps text-embedding generations of a database table and measures whether they work.

The public Python API (the CLI is its client)::

    import ptah

    with ptah.open_project("examples/support/ptah.yaml") as project:
        corpus = ptah.load_corpus("corpora/support.yaml")
        report = project.evaluate(
            corpus,
            generations=["title-body"],
            baseline="examples/support/baseline.json",
            max_drop={"recall": 0.02},
        )
        report.verdict  # "pass" | "fail" | "inconclusive"
        report.runs[0].means["nDCG"].value  # .high: every unjudged row in the top k relevant
        report.save("report.json")  # or save(PATH, "html"): ptah.core.formats

Names not in ``__all__`` are private.
"""

from typing import TYPE_CHECKING

__version__ = "0.1.0"

if (
    TYPE_CHECKING
):  # what type checkers read; at run time each name is imported on first use (_WHERE)
    from ptah._api import Project, load_corpus, load_report, open_project
    from ptah.core.compared import (
        BaselineCaseChange,
        BaselineComparison,
        BaselineMean,
        BaselinePassed,
        BaselineValue,
        CostDelta,
        Family,
        Interval,
        MeasureComparison,
        Provenance,
        Settle,
        SignFlipResult,
        SliceComparison,
    )
    from ptah.core.corpus import Case, Corpus
    from ptah.core.errors import (
        CorpusError,
        IncomparableBaseline,
        InputError,
        NotBuilt,
        OperationalError,
        Problem,
        PtahError,
        SpecError,
        StaleGeneration,
        VariantUnavailable,
    )
    from ptah.core.gate_parts import (
        GateHoles,
        GatePower,
        HolesEstimate,
        HolesSample,
        HolesStratum,
        JudgeAccount,
    )
    from ptah.core.judged import Judgement, JudgementRecord, Sample
    from ptah.core.measures import Mean, Measure, MeasureKind
    from ptah.core.parts import (
        CaseAnn,
        Cost,
        ForbiddenCounts,
        RequiredCounts,
        RerankService,
        RunAnn,
        RunGeneration,
        RunVariant,
        Search,
        SearchFusion,
        SearchIndex,
        SearchRerank,
        Section,
        SliceMeans,
        StageCost,
        TieCounts,
        VariantRerank,
        VariantSearch,
        Verification,
        VerifyResult,
    )
    from ptah.core.plugins import hookimpl
    from ptah.core.report import (
        CaseResult,
        CaseTies,
        Gate,
        Hit,
        Hole,
        KnownMiss,
        Miss,
        Report,
        Result,
        Run,
    )
    from ptah.core.report_parts import (
        ListedSlice,
        ReportBaseline,
        ReportCorpus,
        Rescoring,
        StaleJudgement,
    )
    from ptah.core.request import EvaluationRequest, Fusion, SearchOptions, StatisticsSettings
    from ptah.core.side_by_side import (
        Bootstrap,
        Comparison,
        Flipped,
        PairCaseChange,
        PairComparison,
        PairPassed,
        PairValue,
        Permutation,
        Statistics,
    )
    from ptah.core.spec import (
        GenerationSettings,
        JudgeSettings,
        RerankSettings,
        ServiceSettings,
        SourceSpec,
        Spec,
        Variant,
    )
    from ptah.services.build import BuildSummary
    from ptah.services.index_search import IndexSummary
    from ptah.services.project import (
        Generation,
        GenerationIdentity,
    )  # the API sees adapters through services
    from ptah.services.prune import PrunedGeneration, PruneResult
    from ptah.services.verify import GenerationListing

# Names are imported when first used (PEP 562), so that ``ptah --help`` and ``ptah corpus …`` pay
# for nothing they do not use.
_WHERE = {
    "GateHoles": "ptah.core.gate_parts",
    "GatePower": "ptah.core.gate_parts",
    "HolesEstimate": "ptah.core.gate_parts",
    "HolesSample": "ptah.core.gate_parts",
    "HolesStratum": "ptah.core.gate_parts",
    "JudgeAccount": "ptah.core.gate_parts",
    "ListedSlice": "ptah.core.report_parts",
    "ReportBaseline": "ptah.core.report_parts",
    "ReportCorpus": "ptah.core.report_parts",
    "Rescoring": "ptah.core.report_parts",
    "StaleJudgement": "ptah.core.report_parts",
    "Project": "ptah._api",
    "load_corpus": "ptah._api",
    "load_report": "ptah._api",
    "open_project": "ptah._api",
    "Case": "ptah.core.corpus",
    "Corpus": "ptah.core.corpus",
    "CorpusError": "ptah.core.errors",
    "IncomparableBaseline": "ptah.core.errors",
    "InputError": "ptah.core.errors",
    "NotBuilt": "ptah.core.errors",
    "OperationalError": "ptah.core.errors",
    "Problem": "ptah.core.errors",
    "PtahError": "ptah.core.errors",
    "SpecError": "ptah.core.errors",
    "StaleGeneration": "ptah.core.errors",
    "VariantUnavailable": "ptah.core.errors",
    "Judgement": "ptah.core.judged",
    "JudgementRecord": "ptah.core.judged",
    "Sample": "ptah.core.judged",
    "Measure": "ptah.core.measures",
    "MeasureKind": "ptah.core.measures",
    "Mean": "ptah.core.measures",
    "hookimpl": "ptah.core.plugins",
    "Section": "ptah.core.parts",
    "CaseResult": "ptah.core.report",
    "CaseTies": "ptah.core.report",
    "CaseAnn": "ptah.core.parts",
    "Cost": "ptah.core.parts",
    "ForbiddenCounts": "ptah.core.parts",
    "RequiredCounts": "ptah.core.parts",
    "RerankService": "ptah.core.parts",
    "RunAnn": "ptah.core.parts",
    "RunGeneration": "ptah.core.parts",
    "RunVariant": "ptah.core.parts",
    "Search": "ptah.core.parts",
    "SearchFusion": "ptah.core.parts",
    "SearchIndex": "ptah.core.parts",
    "SearchRerank": "ptah.core.parts",
    "SliceMeans": "ptah.core.parts",
    "StageCost": "ptah.core.parts",
    "TieCounts": "ptah.core.parts",
    "VariantRerank": "ptah.core.parts",
    "VariantSearch": "ptah.core.parts",
    "Verification": "ptah.core.parts",
    "Hit": "ptah.core.report",
    "Hole": "ptah.core.report",
    "KnownMiss": "ptah.core.report",
    "Miss": "ptah.core.report",
    "Report": "ptah.core.report",
    "Result": "ptah.core.report",
    "Run": "ptah.core.report",
    "EvaluationRequest": "ptah.core.request",
    "Fusion": "ptah.core.request",
    "SearchOptions": "ptah.core.request",
    "StatisticsSettings": "ptah.core.request",
    "GenerationSettings": "ptah.core.spec",
    "ServiceSettings": "ptah.core.spec",
    "SourceSpec": "ptah.core.spec",
    "Spec": "ptah.core.spec",
    "JudgeSettings": "ptah.core.spec",
    "RerankSettings": "ptah.core.spec",
    "Variant": "ptah.core.spec",
    "VerifyResult": "ptah.core.parts",
    "BaselineCaseChange": "ptah.core.compared",
    "BaselineComparison": "ptah.core.compared",
    "BaselineMean": "ptah.core.compared",
    "BaselinePassed": "ptah.core.compared",
    "BaselineValue": "ptah.core.compared",
    "Provenance": "ptah.core.compared",
    "CostDelta": "ptah.core.compared",
    "Family": "ptah.core.compared",
    "Interval": "ptah.core.compared",
    "MeasureComparison": "ptah.core.compared",
    "Settle": "ptah.core.compared",
    "SignFlipResult": "ptah.core.compared",
    "SliceComparison": "ptah.core.compared",
    "Bootstrap": "ptah.core.side_by_side",
    "Comparison": "ptah.core.side_by_side",
    "Flipped": "ptah.core.side_by_side",
    "PairCaseChange": "ptah.core.side_by_side",
    "PairComparison": "ptah.core.side_by_side",
    "PairPassed": "ptah.core.side_by_side",
    "PairValue": "ptah.core.side_by_side",
    "Permutation": "ptah.core.side_by_side",
    "Statistics": "ptah.core.side_by_side",
    "Gate": "ptah.core.report",
    "BuildSummary": "ptah.services.build",
    "IndexSummary": "ptah.services.index_search",
    "Generation": "ptah.services.project",
    "GenerationIdentity": "ptah.services.project",
    "PruneResult": "ptah.services.prune",
    "PrunedGeneration": "ptah.services.prune",
    "GenerationListing": "ptah.services.verify",
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
    "BaselineCaseChange",
    "BaselineComparison",
    "BaselineMean",
    "BaselinePassed",
    "BaselineValue",
    "Bootstrap",
    "BuildSummary",
    "Case",
    "CaseAnn",
    "CaseResult",
    "CaseTies",
    "Comparison",
    "Corpus",
    "CorpusError",
    "Cost",
    "CostDelta",
    "EvaluationRequest",
    "Family",
    "Flipped",
    "ForbiddenCounts",
    "Fusion",
    "Gate",
    "GateHoles",
    "GatePower",
    "Generation",
    "GenerationIdentity",
    "GenerationListing",
    "GenerationSettings",
    "Hit",
    "Hole",
    "HolesEstimate",
    "HolesSample",
    "HolesStratum",
    "hookimpl",
    "IncomparableBaseline",
    "IndexSummary",
    "InputError",
    "Interval",
    "JudgeAccount",
    "Judgement",
    "JudgementRecord",
    "JudgeSettings",
    "KnownMiss",
    "ListedSlice",
    "load_corpus",
    "load_report",
    "Mean",
    "Measure",
    "MeasureComparison",
    "MeasureKind",
    "Miss",
    "NotBuilt",
    "open_project",
    "OperationalError",
    "PairCaseChange",
    "PairComparison",
    "PairPassed",
    "PairValue",
    "Permutation",
    "Problem",
    "Project",
    "Provenance",
    "PrunedGeneration",
    "PruneResult",
    "PtahError",
    "Report",
    "ReportBaseline",
    "ReportCorpus",
    "RequiredCounts",
    "RerankService",
    "RerankSettings",
    "Rescoring",
    "Result",
    "Run",
    "RunAnn",
    "RunGeneration",
    "RunVariant",
    "Sample",
    "Search",
    "SearchFusion",
    "SearchIndex",
    "SearchOptions",
    "SearchRerank",
    "Section",
    "ServiceSettings",
    "Settle",
    "SignFlipResult",
    "SliceComparison",
    "SliceMeans",
    "SourceSpec",
    "Spec",
    "SpecError",
    "StageCost",
    "StaleGeneration",
    "StaleJudgement",
    "Statistics",
    "StatisticsSettings",
    "TieCounts",
    "Variant",
    "VariantRerank",
    "VariantSearch",
    "VariantUnavailable",
    "Verification",
    "VerifyResult",
    "__version__",
]
