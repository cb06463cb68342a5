"""What a call costs: one price table, per model family, in US dollars per million tokens.

The figures are list prices for the standard (non-batch) API; a Message Batch is billed at half
of them. Cache writes (5-minute TTL) cost 1.25x the input price and cache reads 0.1x. Unknown
models are priced as the most expensive known family so an estimate never undershoots. These are
estimates for `memd status` and `--dry-run`, not an invoice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

BATCH_DISCOUNT = 0.5
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.10


@dataclass(frozen=True)
class Price:
    input_per_mtok: float
    output_per_mtok: float


# Longest prefix wins. Families, not exact ids, so a dated or newer id of a family is priced right.
PRICES: dict[str, Price] = {
    "claude-haiku": Price(1.00, 5.00),
    "claude-sonnet": Price(3.00, 15.00),
    "claude-opus-4-1": Price(15.00, 75.00),
    "claude-opus-4-0": Price(15.00, 75.00),
    "claude-opus": Price(5.00, 25.00),
    "claude-fable": Price(3.00, 15.00),
    "claude-mythos": Price(15.00, 75.00),
}
FALLBACK = Price(15.00, 75.00)


def price_for(model: str) -> Price:
    best = ""
    for prefix in PRICES:
        if model.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return PRICES[best] if best else FALLBACK


def known_model(model: str) -> bool:
    """Whether the table prices ``model``'s family (else it is priced at ``FALLBACK``)."""
    return any(model.startswith(prefix) for prefix in PRICES)


@dataclass(frozen=True)
class Usage:
    """Tokens one call used, as the API reported them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Every token billed: input, output, cache read and cache write (what the daily budget counts)."""
        return self.input_tokens + self.output_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    def as_dict(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cache_read_tokens": self.cache_read_tokens,
            "cache_write_tokens": self.cache_write_tokens,
        }


def usage_of(message: Any) -> Usage:
    """The ``Usage`` an SDK message reports (read by attribute: no SDK import), zero when it has none."""
    u = getattr(message, "usage", None)
    if u is None:
        return Usage()
    return Usage(
        input_tokens=int(getattr(u, "input_tokens", 0) or 0),
        output_tokens=int(getattr(u, "output_tokens", 0) or 0),
        cache_read_tokens=int(getattr(u, "cache_read_input_tokens", 0) or 0),
        cache_write_tokens=int(getattr(u, "cache_creation_input_tokens", 0) or 0),
    )


def cost_usd(model: str, usage: Usage, *, batch: bool = False, price: Price | None = None) -> float:
    """The estimated cost of ``usage`` on ``model`` (half price in a batch); ``price``, when given,
    instead of the table's (a local endpoint's 0, or the configured price)."""
    p = price if price is not None else price_for(model)
    dollars = (
        usage.input_tokens * p.input_per_mtok
        + usage.cache_write_tokens * p.input_per_mtok * CACHE_WRITE_FACTOR
        + usage.cache_read_tokens * p.input_per_mtok * CACHE_READ_FACTOR
        + usage.output_tokens * p.output_per_mtok
    ) / 1_000_000
    return round(dollars * (BATCH_DISCOUNT if batch else 1.0), 6)
