"""provider: openai in the specification, and what of it the generation identity covers."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ptah.adapters.embedders.openai_compatible import OpenAICompatibleKind, normalised_base_url
from ptah.adapters.embedders.registry import EmbedderRegistry, generation_identity
from ptah.adapters.spec_yaml import load_spec
from ptah.core.errors import EXIT_INPUT, CredentialMissing
from ptah.core.spec import GenerationSettings, ServiceSettings, SourceSpec
from tests.adapters.test_spec_yaml import problems as spec_problems

HEAD = """\
version: 1
source:
  database: sqlite:///support.db
  table: articles
  key_fields: [id]
  text: "{title}"
generations:
  small:
"""
SOURCE = SourceSpec("sqlite:///x.db", "t", ("id",), "{a}")


def spec(tmp_path: Path, generation: str):
    path = tmp_path / "ptah.yaml"
    path.write_text(HEAD + textwrap.indent(textwrap.dedent(generation), "    "), encoding="utf-8")
    return path


def problems(path: Path) -> list[str]:
    """The spec's problems, each without the path before its line."""
    return [problem.removeprefix(f"{path}:") for problem in spec_problems(path)]


def test_a_service_generation_loads_with_its_defaults(tmp_path):
    loaded = load_spec(spec(tmp_path, "provider: openai\nmodel: text-embedding-3-small\n"), env={})
    assert loaded.generation("small") == GenerationSettings(
        "small",
        "text-embedding-3-small",
        service=ServiceSettings("openai", "https://api.openai.com/v1", "OPENAI_API_KEY", 4, 60),
    )
    loaded = load_spec(
        spec(
            tmp_path,
            """\
        provider: openai
        model: nomic-embed-text
        base_url: http://127.0.0.1:11434/v1/
        api_key_env: null
        dimensions: 512
        batch_size: 256
        max_concurrency: 2
        timeout_s: 300
        """,
        ),
        env={},
    )
    assert loaded.generation("small") == GenerationSettings(
        "small",
        "nomic-embed-text",
        batch_size=256,
        dimension=512,
        service=ServiceSettings("openai", "http://127.0.0.1:11434/v1", None, 2, 300),
    )


def test_service_fields_are_refused_where_they_do_not_apply(tmp_path):
    assert problems(
        spec(
            tmp_path,
            """\
        model: sentence-transformers/all-MiniLM-L6-v2
        base_url: http://127.0.0.1:8080/v1
        dimensions: 12
        """,
        )
    ) == [
        "10: generations.small.base_url: applies to a generation embedded by a service only; "
        "add provider: openai or remove it",
        "11: generations.small.dimensions: applies to a generation embedded by a service only; "
        "add provider: openai or remove it",
    ]
    assert problems(
        spec(
            tmp_path,
            """\
        provider: openai
        model: m
        dimension: 12
        max_seq_length: 128
        """,
        )
    ) == [
        "11: generations.small.dimension: applies to model ptah/deterministic only; "
        "to ask a service for fewer dimensions write dimensions:",
        "12: generations.small.max_seq_length: applies to a local model only; a service truncates texts by its "
        "own rules; remove it",
    ]


def test_unknown_fields_and_bad_values_are_located(tmp_path):
    assert problems(
        spec(
            tmp_path,
            """\
        provider: opnai
        model: m
        base_urls: http://x/v1
        api_key_env: sk-live-123
        max_concurrency: 0
        timeout_s: 0.5
        """,
        )
    ) == [
        '9: generations.small.provider: "opnai" is not a provider ptah knows; write provider: openai',
        '11: generations.small.base_urls: unknown field in generations.small; did you mean "base_url"?',
        "12: generations.small.api_key_env: must name an environment variable (letters, digits and _), "
        "not the key itself",
        "13: generations.small.max_concurrency: must be a whole number from 1 to 64, not the number 0",
        "14: generations.small.timeout_s: must be a whole number from 1 to 3,600, not the number 0.5",
    ]


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "http://user:sk-secret@127.0.0.1/v1",
            "must not hold credentials; put the key in the variable api_key_env names",
        ),
        (
            "http://127.0.0.1/v1?key=sk-secret",
            "must not have a query or fragment; write the scheme, host, port and path only",
        ),
        (
            "ftp://127.0.0.1/v1",
            "must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080/v1",
        ),
        ("http://127.0.0.1:99999/v1", "is not a URL; write e.g. http://127.0.0.1:8080/v1"),
        ("http://127.0.0.1/v 1", "must not contain spaces or control characters"),
    ],
)
def test_a_base_url_that_cannot_be_used_is_refused_without_repeating_it(tmp_path, url, message):
    found = problems(spec(tmp_path, f"provider: openai\nmodel: m\nbase_url: {url!r}\n"))
    assert found == [f"11: generations.small.base_url: {message}"]
    assert "sk-secret" not in found[0]


def settings(base_url="http://127.0.0.1:8080/v1", model="m", dimension=None, **kwargs):
    return GenerationSettings(
        "g",
        model,
        dimension=dimension,
        service=ServiceSettings("openai", base_url, "OPENAI_API_KEY", 4),
        **kwargs,
    )


def test_the_identity_covers_provider_model_dimensions_and_the_normalised_base_url():
    identity = generation_identity(settings("HTTP://LocalHost:8080/v1/"), SOURCE, "/nowhere")
    assert identity.parts["model"] == {
        "kind": "openai",
        "provider": "openai",
        "name": "m",
        "dimensions": None,
        "base_url": "http://localhost:8080/v1",
    }
    assert normalised_base_url("https://api.openai.com/v1") == "https://api.openai.com:443/v1"
    assert normalised_base_url("http://[::1]/v1") == "http://[::1]:80/v1"
    same = generation_identity(settings("http://localhost:8080/v1"), SOURCE, "/nowhere").identity
    assert same == identity.identity
    others = [
        settings("http://127.0.0.1:8081/v1"),
        settings("http://127.0.0.1:8080/v2"),
        settings(model="m2"),
        settings(dimension=256),
        settings("https://127.0.0.1:8080/v1"),
        settings(normalize=False),
        settings(query_prefix="q: "),
    ]
    identities = {generation_identity(other, SOURCE, "/nowhere").identity for other in others}
    assert len(identities) == len(others) and identity.identity not in identities


def test_only_the_openai_kind_claims_a_service_generation():
    registry = EmbedderRegistry()
    assert registry.kind_for(settings()).name == "openai"
    assert registry.kind_for(settings(model="ptah/deterministic")).name == "openai"
    assert (
        registry.kind_for(GenerationSettings("g", "ptah/deterministic")).name
        == "ptah/deterministic"
    )
    assert (
        registry.kind_for(GenerationSettings("g", "BAAI/bge-small-en-v1.5")).name
        == "sentence-transformers"
    )
    assert registry.library_versions(settings()) == {
        "ptah": registry.library_versions(settings())["ptah"]
    }


def test_a_missing_key_variable_is_exit_2_naming_it():
    with pytest.raises(CredentialMissing) as caught:
        OpenAICompatibleKind().open(settings(), "/nowhere", env={})
    assert caught.value.exit_code == EXIT_INPUT
    assert str(caught.value) == (
        'generation "g": the environment variable OPENAI_API_KEY that should hold the key '
        "of http://127.0.0.1:8080/v1 is not set; set it, or name another with api_key_env"
    )
