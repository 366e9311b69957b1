"""The renderers: one typed :class:`ptah.core.report.Report`, several readings of it.

``table`` prints it for people on a terminal (rich), ``json`` writes the
``ptah-report@1`` document, ``html`` the self-contained page and ``trec`` a
run's ranked results as TREC run lines. Each takes the typed report; column
headings, mean lines and measure names come from the measure registry
(:mod:`ptah.core.measures`), so a report holding ``MAP@10`` shows it
everywhere with no change here. Renderers build text; writing it to a file
is the caller's (``ptah.adapters.files``).

Imports only ``ptah.core`` and rich; each module is imported on its own, so
a command pays only for the renderer it uses.
"""
