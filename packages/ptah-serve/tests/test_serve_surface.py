"""ptah-serve uses of ptah only its public API (``import ptah``) and the extension surface the
installed core declares (:mod:`ptah.extending`): every import, and every private member it reads of
ptah's objects."""

from __future__ import annotations

from pathlib import Path

from ptah.extending import outside_the_surface

SOURCE = Path(__file__).resolve().parents[1] / "src" / "ptah_serve"


def test_the_add_on_uses_only_the_public_api_and_the_extension_surface():
    assert [
        what for path in sorted(SOURCE.glob("*.py")) for what in outside_the_surface(path)
    ] == []
