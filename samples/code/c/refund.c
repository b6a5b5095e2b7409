#include <stdio.h>
#include "gateway.h"

/* Largest refund accepted, in cents. */
#define MAX_REFUND_CENTS 100000

static const int RETRY_LIMIT = 3;

typedef struct refund {
    long amount;
} refund_t;

enum refund_state { REFUND_PENDING, REFUND_DONE };

struct refund_service {
    struct gateway_config {
        int timeout_ms;
    } config;
    void (*log)(struct refund_service *svc, const char *message);
};

/* Rejects refunds above the limit. */
static int validate(long amount) {
    return amount <= MAX_REFUND_CENTS;
}

int refund_apply(struct refund_service *svc, long amount) {
    if (!validate(amount)) {
        svc->log(svc, "refund too large");
        return -1;
    }
    return gateway_charge(svc->config.timeout_ms, -amount);
}
