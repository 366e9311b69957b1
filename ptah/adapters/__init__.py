"""Adapters around the core: YAML loading, sources, stores, embedders."""
