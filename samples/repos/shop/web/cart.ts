import { formatPrice } from "./format";

export class Cart {
  items: number[] = [];

  total(): number {
    return this.items.reduce((a, b) => a + b, 0);
  }

  label(): string {
    return formatPrice(this.total());
  }
}
