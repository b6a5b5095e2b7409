import React from "react";
import { formatMoney as money } from "./money";
import * as theme from "./theme";
export { refundAll } from "./refunds";

const COLORS = ["green", "red"];

export function* badgeIds(refunds) {
  yield* refunds.map((refund) => refund.id);
}

export class RefundBadge extends React.Component {
  onClick = () => this.props.onSelect(this.props.refund);

  render() {
    const style = new theme.Style(COLORS[0]);
    return (
      <Badge style={style} onClick={this.onClick}>
        <Amount value={money(this.props.refund.amount)} />
      </Badge>
    );
  }
}
