"""What verifying a generation found: its coverage and freshness against the source (the numbers, no
I/O).

:func:`ptah.services.verify.verify` counts them; reports, the CLI and the
vector channel read them. Coverage = rows with a vector / rows; freshness =
vectors made from the text the row holds now / vectors (none when it cannot be
verified, for a table's own vectors).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

MAX_OFFENDERS = 10


@dataclass(frozen=True)
class VerifyResult:
    """Coverage and freshness of one generation (each count defined in
    :mod:`ptah.services.verify`)."""

    generation: str
    identity: str
    built: bool
    rows: int
    vectors: int
    covered: int
    fresh: int
    stale: int
    missing: int
    orphans: int
    stale_keys: tuple[str, ...]
    missing_keys: tuple[str, ...]
    orphan_keys: tuple[str, ...]
    freshness_note: str | None = (
        None  # set when freshness cannot be verified (an external generation): why
    )
    # the source snapshot as this generation renders it: SHA-256 over each row's identity and text
    # digest, in source order (the report's verification.fingerprint; a baseline's tells another
    # snapshot). Not in as_dict.
    fingerprint: str | None = None

    @property
    def coverage(self) -> float | None:
        return self.covered / self.rows if self.rows else None

    @property
    def freshness(self) -> float | None:
        return self.fresh / self.covered if self.covered and self.freshness_note is None else None

    @property
    def complete(self) -> bool:
        return self.missing == 0

    @property
    def fresh_ok(self) -> bool:
        return self.stale == 0

    @property
    def ok(self) -> bool:
        return self.complete and self.fresh_ok and self.orphans == 0

    def as_dict(self) -> dict:
        values = asdict(self)
        for name in ("stale_keys", "missing_keys", "orphan_keys"):
            values[name] = list(values[name])
        values.update(
            coverage=self.coverage,
            freshness=self.freshness,
            complete=self.complete,
            fresh_ok=self.fresh_ok,
            ok=self.ok,
        )
        if (
            self.freshness_note is None
        ):  # a built generation's verification reads as before external ones existed
            del values["freshness_note"]
        del values["fingerprint"]
        return values
