"""S4 cost (docs/rendering.md#s4): what a run's tokens cost, by `CHATUI_PRICES`.

`CHATUI_PRICES` names each model's price in US dollars per million tokens, in and out:
`{"gpt-4o-mini": {"input": 0.15, "output": 0.6}}` — a dict in Django settings, or its
JSON text (the environment, docs/settings.md). Prices are read when a page is shown,
so a changed price reprices every run.

A run's cost is the sum over its steps that report `usage` with a priced model. When a
step's tokens cannot be priced (no usage, no split into in and out, a model without a
price, or several models in one usage) the run's cost is not known, and nothing is
shown: a partial sum would read as the whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from chatui.ingest.values import MAX_TOKENS, USAGE_COUNTS, contract_number

PER_TOKENS = Decimal(1_000_000)
SETTING = "CHATUI_PRICES"


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens."""

    input: Decimal
    output: Decimal


def _amount(model: str, side: str, value: Any) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        value = None
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        amount = Decimal("NaN")
    if not amount.is_finite() or amount < 0:
        raise ImproperlyConfigured(
            f"{SETTING}: the {side} price of {model!r} must be a number of dollars per "
            f"million tokens, 0 or more (got {value!r})"
        )
    return amount


def parse_prices(raw: Any) -> dict[str, Price]:
    """`{"model": {"input": 0.15, "output": 0.6}}` (or its JSON text) as Prices;
    ImproperlyConfigured naming what is wrong."""
    if isinstance(raw, str):
        if not raw.strip():
            return {}
        try:
            raw = json.loads(raw)
        except ValueError as error:
            raise ImproperlyConfigured(f"{SETTING} is not JSON: {error}") from None
    if raw is None:
        return {}
    if not isinstance(raw, Mapping):
        raise ImproperlyConfigured(
            f'{SETTING} must be an object: {{"model": {{"input": 0.15, "output": 0.6}}}}'
        )
    prices = {}
    for model, price in raw.items():
        if not isinstance(price, Mapping) or set(price) - {"input", "output"}:
            raise ImproperlyConfigured(
                f'{SETTING}: {model!r} must be {{"input": dollars, "output": dollars}} '
                "per million tokens"
            )
        prices[str(model)] = Price(
            input=_amount(model, "input", price.get("input", 0)),
            output=_amount(model, "output", price.get("output", 0)),
        )
    return prices


_parsed: tuple[str, dict[str, Price]] | None = None


def prices() -> dict[str, Price]:
    """The setting, parsed once per value (tests change it with override_settings)."""
    global _parsed
    raw = getattr(settings, SETTING, None)
    key = json.dumps(raw, sort_keys=True, default=str)
    if _parsed is None or _parsed[0] != key:
        _parsed = (key, parse_prices(raw))
    return _parsed[1]


def step_cost(metadata: Mapping[str, Any], table: Mapping[str, Price]) -> Decimal | None:
    """One assistant step's cost; None when its tokens cannot be priced. A step that
    used no tokens costs nothing."""
    usage = metadata.get("usage")
    if isinstance(usage, Mapping):
        price = table.get(usage.get("model")) if isinstance(usage.get("model"), str) else None
        counts = [
            contract_number(usage.get(key), MAX_TOKENS, integral=True) for key in USAGE_COUNTS
        ]
        if price is None or None in counts:
            return None
        tokens_in, tokens_out = counts
        return (tokens_in * price.input + tokens_out * price.output) / PER_TOKENS
    return Decimal(0) if metadata.get("tokens") in (None, 0) else None


def run_cost(steps: Iterable[Mapping[str, Any]]) -> Decimal | None:
    """The sum of a run's steps' costs (their metadata); None when no price is set, when
    the run used no tokens, or when one step's tokens cannot be priced."""
    table = prices()
    if not table:
        return None
    total = Decimal(0)
    used = False
    for metadata in steps:
        cost = step_cost(metadata, table)
        if cost is None:
            return None
        used = used or isinstance(metadata.get("usage"), Mapping)
        total += cost
    return total if used else None


def format_cost(amount: Decimal | None) -> str | None:
    """ "$0.0042", "$1.25", "$1,204.50": cents, or two significant digits below a cent."""
    if amount is None:
        return None
    if amount == 0:
        return "$0.00"
    if amount < Decimal("0.01"):
        return f"${amount:.2g}" if amount >= Decimal("0.0001") else "<$0.0001"
    return f"${amount:,.2f}"
