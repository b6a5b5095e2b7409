import fs = require("fs");
const path = require("path");

const MAX_BATCH = 50;

declare function audit(event: string): void;

export function* refundIds(refunds: Refund[]) {
  yield* refunds.map((refund) => refund.id);
}

/** Processes refunds one batch at a time. */
export abstract class Processor {
  abstract process(refund: Refund): void;

  handle = (refund: Refund) => {
    audit("handle");
    this.process(refund);
  };
}

export const archive = new storage.Archive(path.join("refunds", fs.realpathSync(".")));
