import React, { useState } from "react";
import { formatRefund } from "./refunds";

export const PAGE_SIZE = 20;

interface Props {
  refunds: Refund[];
}

/** A paged list of refunds. */
export function RefundList({ refunds }: Props) {
  const [page, setPage] = useState(0);
  function next() {
    setPage(page + 1);
  }
  return (
    <ul onClick={next}>
      {refunds.slice(0, PAGE_SIZE).map((r) => (
        <li key={r.id}>{formatRefund(r)}</li>
      ))}
    </ul>
  );
}

export class RefundTable extends React.Component<Props> {
  render() {
    return <table>{this.rows()}</table>;
  }

  rows() {
    return this.props.refunds.map(formatRefund);
  }
}
