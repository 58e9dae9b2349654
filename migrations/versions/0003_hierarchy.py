"""Generalization hierarchies (spec 001 §1.2): one tree per quasi-identifier of a dataset, leaves
being the column's values as text, stored node by node with parent, depth and leaf count so that
SQL can join rows to ancestors and the engine can rebuild the tree.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-23
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    CREATE TABLE pganon.hierarchy (
        dataset_id  int  NOT NULL,
        column_name name NOT NULL,
        origin      text NOT NULL,
        height      int  NOT NULL CHECK (height >= 0),
        n_leaves    int  NOT NULL CHECK (n_leaves >= 1),
        created_at  timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (dataset_id, column_name),
        FOREIGN KEY (dataset_id, column_name) REFERENCES pganon.attribute ON DELETE CASCADE
    );
    COMMENT ON TABLE pganon.hierarchy IS
        'The generalization hierarchy of one attribute: where it came from (a CSV, a builder) and its shape.';
    CREATE TABLE pganon.hierarchy_node (
        dataset_id  int  NOT NULL,
        column_name name NOT NULL,
        node        text NOT NULL,
        parent      text,
        depth       int  NOT NULL CHECK (depth >= 0),
        leaf_count  int  NOT NULL CHECK (leaf_count >= 1),
        ord         int  NOT NULL,
        PRIMARY KEY (dataset_id, column_name, node),
        FOREIGN KEY (dataset_id, column_name) REFERENCES pganon.hierarchy ON DELETE CASCADE
    );
    COMMENT ON TABLE pganon.hierarchy_node IS
        'Nodes of a hierarchy: parent NULL for the root, depth 0 at the root, leaf_count = leaves below (1 for a leaf).';
    """)


def downgrade() -> None:
    op.execute("DROP TABLE pganon.hierarchy_node, pganon.hierarchy")
