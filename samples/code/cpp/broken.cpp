int first(int x) {
  return x + 1;
}

class Good {
 public:
  int ok() { return first(1); }
};

int broken(int x {
  return x;
}
