fun first(x: Int): Int {
    return x + 1
}

class Good {
    fun ok(): Int {
        return first(1)
    }
}

fun broken(x: Int: Int {
    return x
}
