"""Long sensitive values (issue 12): the primary key of pganon.security_level was a btree on
(dataset_id, column_name, value), whose entries cannot exceed about 2.7 kB, so a longer value
could not get a security level. The key becomes a unique index on md5(value) instead: entries of
fixed size, found by equality as before. Two distinct values with one md5 cannot both be stored
(pganon.set_security_level refuses the second by name rather than overwrite the first).

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-24
"""

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    ALTER TABLE pganon.security_level DROP CONSTRAINT security_level_pkey;
    CREATE UNIQUE INDEX security_level_value_key
        ON pganon.security_level (dataset_id, column_name, md5(value));
    """)


def downgrade() -> None:
    op.execute("""
    DROP INDEX pganon.security_level_value_key;
    ALTER TABLE pganon.security_level ADD PRIMARY KEY (dataset_id, column_name, value);
    """)
