import * as api from "./api";
import { Refund as RefundRecord } from "./models";
import fs = require("fs");
const config = require("./config");
export { RefundList } from "./RefundList";

const MAX_AMOUNT = 100_000;

declare function track(event: string): void;

export type FormState = "idle" | "sending";

export enum Step {
  Amount,
  Confirm,
}

export interface FormProps {
  onDone(refund: RefundRecord): void;
}

export interface ConfirmProps extends FormProps {
  amount: number;
}

export namespace Forms {
  export function* steps() {
    yield Step.Amount;
  }
}

export abstract class BaseForm<P> extends React.Component<P> {
  abstract submit(): void;
}

export class RefundForm extends BaseForm<FormProps> implements Validating {
  validate(amount: number): boolean;

  onSubmit = () => {
    track("submit");
    this.submit();
  };

  submit() {
    api.send(new RefundRecord(MAX_AMOUNT), new api.Options(config.retries));
  }

  render() {
    return (
      <Layout title="Refund">
        <Field name="amount" />
      </Layout>
    );
  }
}

export const AmountField = ({ value }: { value: number }) => <Field name="amount" value={value} />;
