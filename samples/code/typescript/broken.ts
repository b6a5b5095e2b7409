export function first(x: number): number {
  return x + 1;
}

export class Good {
  ok(): number {
    return first(1);
  }
}

export function broken(x: number {
  return x;
}
