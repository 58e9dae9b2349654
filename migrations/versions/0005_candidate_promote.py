"""Release lifecycle and risk (issue 11): a publish makes a *candidate*; `pganon.promote` makes it
the dataset's *current* release (the one the stable views show); the release it replaces becomes
*superseded*. Every release stores its risk figures, measured from the analyst's seat, and each
dataset a policy that promote enforces.

Existing releases: the newest published release of each dataset was what the views showed, so it
becomes current; older published releases become superseded.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-24
"""

from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.execute("""
    ALTER TABLE pganon.release DROP CONSTRAINT release_status_check;
    UPDATE pganon.release r SET status = CASE
        WHEN r.id = (SELECT max(x.id) FROM pganon.release x
                      WHERE x.dataset_id = r.dataset_id AND x.status = 'published') THEN 'current'
        ELSE 'superseded' END
     WHERE r.status = 'published';
    ALTER TABLE pganon.release ALTER COLUMN status SET DEFAULT 'candidate',
        ADD CONSTRAINT release_status_check
            CHECK (status IN ('candidate', 'current', 'superseded', 'dropped')),
        ADD COLUMN promoted_at timestamptz;
    UPDATE pganon.release SET promoted_at = created_at WHERE status IN ('current', 'superseded');
    -- at most one current release per dataset, whatever concurrent promotes do
    CREATE UNIQUE INDEX release_one_current ON pganon.release (dataset_id) WHERE status = 'current';
    COMMENT ON COLUMN pganon.release.status IS
        'candidate (verified, measured, assessed, invisible to analysts), current (what the views show), '
        'superseded (was current; promote it again to go back), dropped.';

    -- views <name>_st_long and <name>_promise must fit in 63 bytes: names of at most 55 bytes
    -- (NOT VALID: a dataset registered earlier with 56 keeps its name)
    ALTER TABLE pganon.dataset DROP CONSTRAINT dataset_name_check,
        ADD CONSTRAINT dataset_name_check CHECK (octet_length(name) BETWEEN 1 AND 55) NOT VALID;
    ALTER TABLE pganon.dataset ADD COLUMN policy jsonb NOT NULL DEFAULT '{}'
        CHECK (jsonb_typeof(policy) = 'object');
    COMMENT ON COLUMN pganon.dataset.policy IS
        'Risk thresholds promote enforces (pganon.set_policy); a key left out takes the release''s promise.';

    CREATE TABLE pganon.release_risk (
        release_id bigint NOT NULL REFERENCES pganon.release ON DELETE CASCADE,
        ord        int    NOT NULL,
        measure    text   NOT NULL,
        scope      text   NOT NULL,
        value      float8,
        promise    float8,
        policy_key text,
        detail     text   NOT NULL,
        PRIMARY KEY (release_id, ord)
    );
    COMMENT ON TABLE pganon.release_risk IS
        'Risk figures of a release, measured from the analyst''s seat (its published relations and its '
        'stated promise). promise: the threshold the release''s own promise implies; policy_key: the '
        'dataset policy key that may override it (NULL: informational).';
    """)


def downgrade() -> None:
    op.execute("""
    DROP TABLE pganon.release_risk;
    ALTER TABLE pganon.dataset DROP COLUMN policy, DROP CONSTRAINT dataset_name_check,
        ADD CONSTRAINT dataset_name_check CHECK (octet_length(name) BETWEEN 1 AND 56);
    DROP INDEX pganon.release_one_current;
    ALTER TABLE pganon.release DROP CONSTRAINT release_status_check, DROP COLUMN promoted_at;
    UPDATE pganon.release SET status = 'published' WHERE status IN ('current', 'superseded');
    UPDATE pganon.release SET status = 'dropped' WHERE status = 'candidate';  -- never shown: out of the list
    ALTER TABLE pganon.release ALTER COLUMN status SET DEFAULT 'published',
        ADD CONSTRAINT release_status_check CHECK (status IN ('published', 'dropped'));
    """)
