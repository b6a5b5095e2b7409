fn first(x: u64) -> u64 {
    x + 1
}

struct Good;

impl Good {
    fn ok(&self) -> u64 {
        first(1)
    }
}

fn broken(x: u64 -> u64 {
    x
}
