"""The one registry class: items by name in the order registered, a taken name refused, a miss
naming them all."""

from __future__ import annotations

import pytest

from ptah.core.errors import InputError, PluginError
from ptah.core.registry import Registry


def test_items_are_kept_by_name_in_the_order_registered():
    registry: Registry[int] = Registry("colour")
    assert registry.register("red", 1) == 1
    registry.register("green", 2)
    assert registry.names() == ("red", "green") and list(registry) == [1, 2] and len(registry) == 2
    assert registry.get("green") == 2 and "red" in registry and "blue" not in registry
    registry.unregister("red")
    registry.unregister("red")  # twice is fine
    assert registry.names() == ("green",)


def test_a_taken_name_is_a_plugin_error_and_a_miss_names_every_item():
    registry = _red_green(Registry("colour"))
    with pytest.raises(PluginError, match='^the colour "red" is registered already$') as taken:
        registry.register("red", 3)
    assert taken.value.exit_code == 3 and registry.get("red") == 1
    with pytest.raises(InputError, match="^unknown colour 'blue'; use red, green$") as missed:
        registry.get("blue")
    assert missed.value.exit_code == 2
    with pytest.raises(ValueError, match="^unknown colour 'blue'; use one of red, green$"):
        _red_green(Registry("colour", unknown=ValueError, use="use one of")).get("blue")


def _red_green(registry: Registry[int]) -> Registry[int]:
    registry.register("red", 1)
    registry.register("green", 2)
    return registry
