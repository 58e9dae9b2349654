"""pganon: the admin package. Installs the in-database engine, manages the catalog and releases."""

__version__ = "0.1.0"
