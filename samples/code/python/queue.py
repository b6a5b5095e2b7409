"""A queue of pending refunds (Python 3.12 syntax)."""

import abc

from payments.types import *

type RefundId = str


class RefundQueue(list[Refund], abc.ABC):
    """Refunds waiting for the gateway, oldest first."""

    def next_id(self) -> RefundId:
        return self.pop(0).id
