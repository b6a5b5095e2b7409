package com.example.payments;

import java.util.ArrayList;
import java.util.List;
import static com.example.gateway.Gateway.charge;

/** Applies refunds through a gateway. */
public class RefundService extends BaseService implements Refundable {
    public static final long MAX_REFUND_CENTS = 100_000L;

    private final Gateway gateway;

    public RefundService(Gateway gateway) {
        this.gateway = gateway;
    }

    @Override
    public Refund refund(Payment payment, long amount) {
        this.validate(amount);
        return new Refund(payment.getId(), amount);
    }

    private void validate(long amount) {
        if (amount > MAX_REFUND_CENTS) {
            throw new IllegalArgumentException("refund too large");
        }
    }

    public static List<Refund> refundAll(List<Payment> payments) {
        List<Refund> out = new ArrayList<>();
        for (Payment p : payments) {
            out.add(charge(p, -p.getAmount()));
        }
        return out;
    }

    /** One line of a receipt. */
    public static class Receipt {
        String render() {
            return String.format("%d", 1);
        }
    }
}

interface Refundable {
    Refund refund(Payment payment, long amount);
}

enum RefundState { PENDING, DONE }
