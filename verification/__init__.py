"""The protocol's Promela models and the script that checks them with spin (README.md)."""
