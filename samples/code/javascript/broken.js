function first(x) {
  return x + 1;
}

class Good {
  ok() {
    return first(1);
  }
}

function broken(x {
  return x;
}
