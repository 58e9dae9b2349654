"""pganon's in-database engine: plain Python modules that PL/Python runs inside the server.

Nothing here imports psycopg or the admin package. Modules take plain lists/arrays and return
plain data; only `pganon_engine.plpy_adapter` touches `plpy`. The same modules import and run in
the admin's venv, which is how the unit tests exercise them without a database.
"""

__version__ = "0.1.0"
