"""The stored formats of core/identity.py, pinned: a store written earlier must still compare
equal."""

from __future__ import annotations

from ptah.core.provenance import row_identity, text_digest


def test_row_identity_prefixes_each_component_with_its_length_in_code_points():
    assert row_identity(("acme1", "2")) == "5:acme11:2"
    assert row_identity(("42",)) == "2:42"
    assert row_identity(("é😀",)) == "2:é😀"
    assert row_identity(("",)) == "0:"


def test_row_identity_keeps_keys_apart_that_a_separator_would_join():
    assert row_identity(("a:1", "b")) != row_identity(("a", "1:b"))
    assert row_identity(("a\x1fb", "c")) != row_identity(("a", "b\x1fc"))


def test_text_digest_is_the_lowercase_hex_sha256_of_the_utf8_text():
    assert text_digest("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert text_digest("é") == "4a99557e4033c3539de2eb65472017cad5f9557f7a0625a09f1c3f6e2ba69c4c"
