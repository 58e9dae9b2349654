"""The sixteen publish methods, one subpackage per release family. Each subpackage holds its
planners (plain algorithms, no database) and `family`, the module that implements the family
interface (`pganon_engine.release.families.Family`) and is listed once in the registry.
Families may reuse a lower family's steps (anatomy and rating reuse bucketization's)."""
