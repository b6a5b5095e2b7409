def first(x):
    return x + 1


class Good:
    def ok(self):
        return first(1)


def broken(x:
    return x
