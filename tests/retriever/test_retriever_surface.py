"""The retriever channel is written as a third party would write it: its modules import only
ptah's public API, the extension surface (:mod:`ptah.extending`) and each other."""

from __future__ import annotations

from pathlib import Path

from ptah.extending import outside_the_surface

PLUGIN = Path(__file__).resolve().parents[2] / "ptah" / "retriever"


def test_the_retriever_uses_only_the_public_api_and_the_extension_surface():
    found = [what for path in sorted(PLUGIN.glob("*.py")) for what in outside_the_surface(path)]
    assert [what for what in found if ": ptah.retriever." not in what] == []
    assert len(list(PLUGIN.glob("*.py"))) == 5


def test_it_comes_in_through_the_door_as_a_default_plugin():
    from ptah.core.parts import sections
    from ptah.core.plugins import DEFAULT_PLUGINS
    from ptah.services.channels import channel

    assert "ptah.retriever" in DEFAULT_PLUGINS
    assert type(channel("retriever")).__module__ == "ptah.retriever.channel"
    assert "retriever" in [section.name for section in sections()]
