import { charge } from "./gateway.js";
const path = require("path");
const format = require("util").format;
const { readFile, writeFile: write } = require("fs");

export const MAX_REFUND_CENTS = 100000;

/** Applies refunds to payments through a gateway. */
export class RefundService extends BaseService {
  constructor(gateway) {
    super();
    this.gateway = gateway;
  }

  refund(amount) {
    this.validate(amount);
    return { amount };
  }

  validate(amount) {
    if (amount > MAX_REFUND_CENTS) {
      throw new Error("refund too large");
    }
  }
}

export function refundAll(payments) {
  function one(payment) {
    return charge(payment, -payment.amount);
  }
  return payments.map(one);
}

export const receiptPath = (id) => path.join("receipts", String(id));

RefundService.prototype.total = function total(payments) {
  return payments.length;
};

RefundService.prototype.count = RefundService.prototype.size = function size(payments) {
  return this.total(payments);
};
