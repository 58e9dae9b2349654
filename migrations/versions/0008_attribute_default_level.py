"""Default security level (issue 13): a sensitive attribute may name the level its unlisted values
get (pganon.set_default_level); NULL means the dataset's highest level with an l, the most
protective. The effective level of a value is defined once, by pganon._effective_level (sql/).

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("ALTER TABLE pganon.attribute ADD COLUMN default_level int CHECK (default_level >= 0)")


def downgrade() -> None:
    op.execute("ALTER TABLE pganon.attribute DROP COLUMN default_level")
