def fine() -> int:
    return 1


def broken(:
    return
