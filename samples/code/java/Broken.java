public class Broken {
    static int first(int x) {
        return x + 1;
    }

    int ok() {
        return first(1);
    }

    int broken(int x {
        return x;
    }
}
