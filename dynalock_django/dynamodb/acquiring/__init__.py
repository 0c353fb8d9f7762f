"""Acquiring: deciding an acquire without I/O (the plans), sending it (the acquirers), and an operator's writes."""
