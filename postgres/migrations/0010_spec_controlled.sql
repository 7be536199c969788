-- The settings control_work_spec set since a spec's definition was stored
-- (coordinate.WorkSpecMeta.Controlled, a set of ControlledSettings bits:
-- 1 continuous, 2 interval, 4 max_running, 8 weight). get_work_spec_meta
-- shows those as set and the others as the definition gave them. spec_set
-- (sql/specs.sql) clears it, spec_control sets it. Specs stored before
-- this migration have none marked; a setting that differs from the
-- definition's is still shown as set (jobserver's metaReply).
ALTER TABLE work_spec ADD COLUMN controlled smallint NOT NULL DEFAULT 0;
