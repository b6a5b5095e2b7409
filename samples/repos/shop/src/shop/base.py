class Service:
    """Base of every service."""

    def log(self, message: str) -> None:
        print(message)
