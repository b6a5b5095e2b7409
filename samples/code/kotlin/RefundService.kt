package com.example.payments

import com.example.gateway.charge
import com.example.models.Refund as RefundRecord
import kotlin.math.max

const val MAX_REFUND_CENTS = 100_000L

/** Something that can be refunded. */
interface Refundable {
    fun refund(amount: Long): RefundRecord
}

/** Applies refunds through a gateway. */
class RefundService(private val gateway: Gateway) : BaseService(), Refundable {
    override fun refund(amount: Long): RefundRecord {
        this.validate(amount)
        return RefundRecord(max(amount, 0L))
    }

    private fun validate(amount: Long) {
        require(amount <= MAX_REFUND_CENTS) { "refund too large" }
    }

    companion object {
        const val LIMIT = 3

        fun create(): RefundService = RefundService(Gateway.default())
    }
}

fun refundAll(payments: List<Payment>): List<RefundRecord> {
    fun one(p: Payment) = charge(p, -p.amount)
    return payments.map(::one)
}

object Receipts {
    fun render(id: Long): String = "receipt $id"
}

typealias RefundId = String
