"""SA linking metadata for GT/ST releases with one-to-many links (spec 004 §1.3): which SAs
identify which ("identified by" lists, whose sizes are the weights), the external factor chi
per SA, and an optional explicit delta / zeta per dataset.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE pganon.sa_dependency (
        dataset_id    int  NOT NULL,
        column_name   name NOT NULL,
        identified_by name NOT NULL CHECK (identified_by <> column_name),
        PRIMARY KEY (dataset_id, column_name, identified_by),
        FOREIGN KEY (dataset_id, column_name) REFERENCES pganon.attribute ON DELETE CASCADE,
        FOREIGN KEY (dataset_id, identified_by) REFERENCES pganon.attribute ON DELETE CASCADE
    );
    COMMENT ON TABLE pganon.sa_dependency IS
        'Domain knowledge: sensitive attribute column_name is identified by identified_by (spec 004 Table 11).';
    CREATE TABLE pganon.sa_linking (
        dataset_id int PRIMARY KEY REFERENCES pganon.dataset ON DELETE CASCADE,
        delta      name,
        zeta       name[],
        chi        jsonb NOT NULL DEFAULT '{}'
    );
    COMMENT ON TABLE pganon.sa_linking IS
        'Per dataset: explicit delta (the SA that links buckets), zeta (SAs eq. 5 ignores), chi (external factor per SA).';
    """)


def downgrade() -> None:
    op.execute("DROP TABLE pganon.sa_linking, pganon.sa_dependency")
