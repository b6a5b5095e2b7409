"""Money helpers."""

CURRENCY = "EUR"


def round_half_even(amount: float) -> float:
    """Round to cents, half to even."""
    return round(amount, 2)


def to_cents(amount: float) -> int:
    return int(round_half_even(amount) * 100)
