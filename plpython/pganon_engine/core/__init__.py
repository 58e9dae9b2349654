"""What every layer shares: the engine's error type, the database handle (the only code that
touches `plpy`), interrupt points, parameter parsing, column types, the catalog reader and the
per-release random numbering. Imports nothing else of the engine."""
