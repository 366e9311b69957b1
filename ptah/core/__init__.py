"""The pure core: corpus model, digest, metrics, ranking, report, baseline diff, typed errors.

Imports only the standard library, numpy and ``ptah.core`` itself (a test enforces it).
"""
