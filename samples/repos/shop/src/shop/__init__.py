"""A small shop: orders, payments and refunds (a fixture for graphmem's bootstrap tests)."""
