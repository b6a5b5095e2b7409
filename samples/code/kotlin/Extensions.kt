package com.example.payments

import com.example.models.*

enum class RefundState {
    PENDING,
    DONE,
}

/** The amount in whole units. */
fun Refund.units(): Long = amount / 100
