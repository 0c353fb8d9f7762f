"""The wire: the table's format (items, layout, queue of waiters) and every request's parameters and conditions."""
