"""Use cases: build, verify, search (and later evaluate) -- the one place that wires adapters to
core.

The CLI imports these modules lazily, inside its command functions, so that
``ptah --help`` never imports numpy-heavy adapters or torch.
"""
