"""ptah: keeps text-embedding generations of a database table and measures whether they work."""

__version__ = "0.1.0"
