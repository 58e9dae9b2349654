"""Semantic rules (spec 003 §2.3): owner-written statements about sensitive values ("cp is
typical or atypical angina: heart disease"). A rule is effective on an equivalence class when it
covers (nearly) all its records; semantic anonymization merges such classes.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-24
"""

from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE pganon.semantic_rule (
        dataset_id  int  NOT NULL,
        rule_id     text NOT NULL CHECK (rule_id <> ''),
        column_name name NOT NULL,
        predicate   text NOT NULL CHECK (predicate IN ('in', 'between', '=', '>', '>=', '<', '<=')),
        vals        text[] NOT NULL,
        category    text NOT NULL,
        PRIMARY KEY (dataset_id, rule_id),
        FOREIGN KEY (dataset_id, column_name) REFERENCES pganon.attribute ON DELETE CASCADE
    );
    COMMENT ON TABLE pganon.semantic_rule IS
        'Owner-written semantic rules on sensitive values (spec 003 §2.3): rule_id, the SA, a predicate '
        '(in a value list, between low and high inclusive, or a comparison) and the semantic category.';
    """)


def downgrade() -> None:
    op.execute("DROP TABLE pganon.semantic_rule")
