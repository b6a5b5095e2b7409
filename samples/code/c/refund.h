#ifndef REFUND_H
#define REFUND_H

/* Cents in a whole unit. */
#define CENTS(units) ((units) * 100)

/* The refund's label; the caller frees it. */
char *refund_label(long amount) {
    return format_label(CENTS(amount));
}

#endif
