package com.example.payments;

import java.util.*;

/** A refund as stored. */
public record RefundRecord(long id, long amount) implements Auditable {
    public long cents() {
        return Math.multiplyExact(amount, 100);
    }
}

@interface Audited {
    String value();
}

interface Auditable extends Comparable<Auditable>, Serializable {
    int VERSION = 2;
}
