"""Catalog of pganon 0.1: datasets, attributes, security levels, l per level, releases, engine modules.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE SCHEMA IF NOT EXISTS pganon_data;
    COMMENT ON SCHEMA pganon_data IS 'pganon: release relations (GT, ST, row-to-group maps). Admin only.';
    CREATE SCHEMA IF NOT EXISTS pganon_release;
    COMMENT ON SCHEMA pganon_release IS 'pganon: stable views on the newest release of each dataset; what pganon_reader may read.';

    CREATE TABLE pganon.dataset (
        id            serial PRIMARY KEY,
        name          text NOT NULL UNIQUE CHECK (octet_length(name) BETWEEN 1 AND 56),
        source        regclass NOT NULL,
        key_column    name NOT NULL,
        person_column name,
        created_at    timestamptz NOT NULL DEFAULT now()
    );

    CREATE TABLE pganon.attribute (
        dataset_id  int  NOT NULL REFERENCES pganon.dataset ON DELETE CASCADE,
        column_name name NOT NULL,
        role        text NOT NULL CHECK (role IN ('identifier', 'quasi', 'sensitive', 'insensitive')),
        kind        text CHECK (kind IN ('numeric', 'categorical', 'date')),
        position    int  NOT NULL,
        PRIMARY KEY (dataset_id, column_name)
    );

    CREATE TABLE pganon.security_level (
        dataset_id  int  NOT NULL,
        column_name name NOT NULL,
        value       text NOT NULL,
        level       int  NOT NULL CHECK (level >= 0),
        PRIMARY KEY (dataset_id, column_name, value),
        FOREIGN KEY (dataset_id, column_name) REFERENCES pganon.attribute ON DELETE CASCADE
    );

    CREATE TABLE pganon.level_l (
        dataset_id int NOT NULL REFERENCES pganon.dataset ON DELETE CASCADE,
        level      int NOT NULL CHECK (level >= 0),
        l          int NOT NULL CHECK (l >= 1),
        PRIMARY KEY (dataset_id, level)
    );

    CREATE TABLE pganon.release (
        id              bigserial PRIMARY KEY,
        dataset_id      int  NOT NULL REFERENCES pganon.dataset ON DELETE CASCADE,
        method          text NOT NULL,
        params          jsonb NOT NULL,
        status          text NOT NULL DEFAULT 'published' CHECK (status IN ('published', 'dropped')),
        engine_version  text NOT NULL,
        layout          jsonb NOT NULL,
        source_rows     bigint NOT NULL,
        published_rows  bigint NOT NULL,
        suppressed_rows bigint NOT NULL,
        groups          bigint NOT NULL,
        metrics         jsonb NOT NULL DEFAULT '{}',
        phase_seconds   jsonb NOT NULL DEFAULT '{}',
        created_at      timestamptz NOT NULL DEFAULT now()
    );
    COMMENT ON COLUMN pganon.release.layout IS
        'What the release relations hold: key, QI/SA/insensitive columns with kinds, the relation names.';

    CREATE TABLE pganon._engine_module (
        name       text PRIMARY KEY,
        is_package boolean NOT NULL,
        source     text NOT NULL
    );

    CREATE TABLE pganon._installation (
        singleton     boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        version       text NOT NULL,
        engine_hash   text NOT NULL,
        created_plpython boolean NOT NULL DEFAULT false,
        installed_at  timestamptz NOT NULL DEFAULT now()
    );
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE pganon._installation, pganon._engine_module, pganon.release, pganon.level_l,
               pganon.security_level, pganon.attribute, pganon.dataset;
    DROP SCHEMA pganon_release CASCADE;
    DROP SCHEMA pganon_data CASCADE;
    """)
