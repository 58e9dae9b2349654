-- All grants, in one place. Start from nothing; the reader gets the release views and no more.

REVOKE ALL ON SCHEMA pganon, pganon_data, pganon_release FROM PUBLIC;
REVOKE ALL ON ALL TABLES IN SCHEMA pganon, pganon_data FROM PUBLIC;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA pganon FROM PUBLIC;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA pganon FROM PUBLIC;

GRANT USAGE ON SCHEMA pganon_release TO pganon_reader;
GRANT SELECT ON ALL TABLES IN SCHEMA pganon_release TO pganon_reader;
