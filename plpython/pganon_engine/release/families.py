"""The family interface and the registry: which module publishes which method.

A *family* is one release shape (bucketization GT/ST, linked GT/ST, generalized GT, ...) and the
methods that produce it. The pipeline (`pipeline`) knows nothing of any method: it asks the
family to parse its parameters, to build the release relations (steps 1-4: snapshot, plan,
assign, materialize), to describe them (the layout the verifier, risk and the views read), to
say what to record, and to measure what it built. Everything else (numbering, recording,
verification, risk, promote) is the same for every family and lives in the pipeline.

Adding a method: a subpackage of `pganon_engine.methods` whose `family` module satisfies
`Family` (docs/architecture.md walks through it), plus one line in `REGISTRY` below.
"""

from collections.abc import Collection
from typing import Protocol, runtime_checkable

from pganon_engine.methods.anatomy import family as anatomy
from pganon_engine.methods.bucketization import family as bucketization
from pganon_engine.methods.generalization import family as generalization
from pganon_engine.methods.linked import family as linked
from pganon_engine.methods.person import family as person
from pganon_engine.methods.rating import family as rating
from pganon_engine.methods.semantic import family as semantic


@runtime_checkable
class Family(Protocol):
    """What a release family module provides (modules satisfy it structurally)."""

    METHODS: Collection[str]
    """The method names this family publishes (`pganon.publish(dataset, method, ...)`)."""

    PROTECTS_PERSONS: bool
    """True when every step counts persons, not records: only such a family may publish a
    dataset with a person column (a person's several records would otherwise pass for several
    people, the review's "persons counted as rows")."""

    def parse_params(self, method: str, params: dict, ds) -> dict:
        """Check and type the caller's parameters before anything is locked or written, so a bad
        request is refused with PA002/PA005 naming the parameter, never half-done. Returns the
        family's working parameters `p`, which every later step reads."""

    def build(self, db, ds, p: dict, rel: dict, phases) -> tuple[int, int]:
        """Steps 1-4 (snapshot, plan, assign, materialize), each run through `phases.run(name,
        ...)` so its seconds are recorded and a cancel reaches it. Writes the relations named in
        `rel` (GT, ST, the admin-only map ...) from the snapshot (`core.snapshot`), never the live
        source; returns (source rows, groups). Families differ most here, so it is one step
        to the pipeline: the plan's shape (buckets, partitions, clusters) is the family's own."""

    def layout(self, ds, p: dict, rel: dict) -> dict:
        """The release's self-description: its relations, QIs and SAs with how each is
        published, and the promise (model and parameters). The independent verifier, risk
        assessment, renumbering and the analyst views read the release through it alone, never
        through family code, which is what keeps the verifier independent."""

    def recorded_params(self, params: dict, p: dict) -> dict:
        """The parameters stored with the release: everything needed to reproduce it (seed,
        tie rule, derived values), since releases are immutable and reproducible."""

    def measure(self, db, ds, p: dict, rel: dict, lay: dict, source_rows: int) -> dict:
        """Step 6: the family's utility metrics (AIL, NCP, query error ...), read from the
        release relations and the snapshot, stored with the release and shown by
        `pganon.release_metrics`."""


# One line per family: the order is the order of `pganon publish --help`'s groups.
REGISTRY = (bucketization, linked, generalization, person, anatomy, rating, semantic)

FAMILIES = {method: family for family in REGISTRY for method in family.METHODS}


def person_aware_methods():
    return sorted(m for m, f in FAMILIES.items() if f.PROTECTS_PERSONS)


def relations(release_id):
    """The names of a release's relations in pganon_data (admin-only storage behind the views)."""
    base = f"pganon_data.r{int(release_id)}"
    return {"gt": f"{base}_gt", "st": f"{base}_st", "map": f"{base}_map", "levels": f"{base}_levels",
            "st_long": f"{base}_st_long", "categories": f"{base}_categories", "promise": f"{base}_promise"}
