"""Counted locks: the faces ``client.semaphore(...)`` and ``client.readers_writer(...)`` return."""
