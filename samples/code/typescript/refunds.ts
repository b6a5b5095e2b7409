import { charge } from "./gateway";
import * as log from "./log";
import Payment, { Refund as RefundRecord } from "./models";
export { formatMoney } from "./money";

export const MAX_REFUND_CENTS = 100_000;

export interface Refundable {
  refund(amount: number): RefundRecord;
}

export interface AuditedRefundable extends Refundable {
  audit(): void;
}

export type RefundId = string;

export enum RefundState {
  Pending,
  Done,
}

/** Applies refunds to payments through a gateway. */
export class RefundService extends BaseService implements Refundable {
  constructor(private readonly gateway: Gateway) {
    super();
  }

  refund(amount: number): RefundRecord {
    this.validate(amount);
    return new RefundRecord(amount);
  }

  private validate(amount: number): void {
    if (amount > MAX_REFUND_CENTS) {
      throw new Error(`refund of ${amount} is too large`);
    }
  }
}

export function refundAll(payments: Payment[]): RefundRecord[] {
  function one(payment: Payment): RefundRecord {
    return charge(payment, -payment.amount);
  }
  return payments.map(one);
}

export const formatRefund = (refund: RefundRecord): string => log.format(refund);

export namespace Refunds {
  export function total(refunds: RefundRecord[]): number {
    return refunds.length;
  }
}
