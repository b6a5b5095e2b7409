"""Refunds: apply a refund to a settled payment."""

import logging
import os.path as osp

from payments.gateway import charge as gateway_charge
from payments.models import Payment, Refund

from .base import BaseService

MAX_REFUND_CENTS = 100_000
log = logging.getLogger(__name__)


class RefundError(Exception):
    """A refund that cannot be applied."""


class RefundService(BaseService):
    """Applies refunds to payments through a gateway."""

    LIMIT = 3

    def __init__(self, gateway: object) -> None:
        self.gateway = gateway

    def apply(self, payment: Payment, amount: int) -> Refund:
        """Refund ``amount`` cents of ``payment``."""
        self.validate(payment, amount)
        log.info("refund %s", payment.id)
        return Refund(payment.id, amount)

    # Rejects refunds above the limit.
    # Called before every refund.
    def validate(self, payment: Payment, amount: int) -> None:
        if amount > MAX_REFUND_CENTS:
            raise RefundError(f"refund of {amount} is too large")

    class Receipt:
        def render(self) -> str:
            return osp.join("receipts", str(self))


def refund_all(payments: list[Payment]) -> list[Refund]:
    def one(payment: Payment) -> Refund:
        return gateway_charge(payment, -payment.amount)

    return [one(p) for p in payments]


@staticmethod
def default_service() -> RefundService:
    return RefundService(gateway=None)
