-- The lock service (coordinate.Locker, locks.go): one row per locked path,
-- shared by every daemon on the database. key is the path's
-- coordinate.LockPath key (label keys, each preceded by its length), so a
-- path's extensions are the keys it is a byte prefix of, found by a range
-- scan of the primary key. deadline is bigint nanoseconds since the epoch,
-- as every time here; a lock whose deadline is before now is gone.
CREATE TABLE lock_path (
    namespace_id bigint NOT NULL REFERENCES namespace (id) ON DELETE CASCADE,
    key          bytea NOT NULL,
    owner        bytea NOT NULL,
    owner_text   boolean NOT NULL,
    deadline     bigint NOT NULL,
    PRIMARY KEY (namespace_id, key)
);
