"""Refunds."""

from shop.base import Service
from shop.money import round_half_even


class RefundService(Service):
    """Gives money back."""

    def apply(self, order_id: str, amount: float) -> float:
        """Refund ``amount`` on an order."""
        total = round_half_even(amount)
        self.log(f"refund {order_id}: {total}")
        return self.fee(total)

    def fee(self, total: float) -> float:
        return total * 0.99


def refund_all(orders: list[str]) -> list[float]:
    service = RefundService()
    return [service.apply(order, 1.0) for order in orders]
