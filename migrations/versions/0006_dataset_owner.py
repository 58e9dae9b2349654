"""Delegation (issue 12): every dataset has an owner, the role that registered it. Members of
pganon_admin see and change only the datasets of roles they belong to (row-level security,
sql/999-privileges.sql), and a publish runs with the owner's rights.

Existing datasets: owned by the role that runs this upgrade (the installing superuser), as
they were managed by superusers until now.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-24
"""

from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    ALTER TABLE pganon.dataset ADD COLUMN owner regrole NOT NULL DEFAULT (current_user::regrole);
    COMMENT ON COLUMN pganon.dataset.owner IS
        'The role that registered the dataset: its members manage it; its releases run with its rights.';
    """)


def downgrade() -> None:
    op.execute("ALTER TABLE pganon.dataset DROP COLUMN owner")
