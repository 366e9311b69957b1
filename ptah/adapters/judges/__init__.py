"""Model judges: the kinds that grade (query, judging text) pairs (docs/judges.md).

``encoder`` (a generation's model or a cross-encoder, with thresholds) and
``chat`` (an OpenAI-compatible chat completions service), plus plug-ins' kinds
(entry point group ``ptah.judges``). Importing this package imports neither
torch nor httpx, nor loads any plugin.
"""

from __future__ import annotations

from ptah.adapters.judges.base import Judge, JudgeContext, JudgeKind
from ptah.adapters.judges.registry import JudgeRegistry, judge_kinds, open_judge

__all__ = ["Judge", "JudgeContext", "JudgeKind", "JudgeRegistry", "judge_kinds", "open_judge"]
