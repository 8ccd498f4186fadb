-- What admission reads (studies, their arms, tasks and task pools, policy versions) changes rarely: the bot keeps
-- it in memory (bot/session/directory.ts) and asks only whether it changed. Every statement that changes one of
-- these tables counts up the setting admission.version in the same transaction as the change (so no reader sees
-- the new count before the change itself), whichever process or tool made it.
CREATE FUNCTION "sweetloop_admission_changed"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "Setting" ("key", "value", "updatedAt") VALUES ('admission.version', '1'::jsonb, CURRENT_TIMESTAMP)
  ON CONFLICT ("key") DO UPDATE SET "value" = to_jsonb(("Setting"."value")::text::bigint + 1), "updatedAt" = CURRENT_TIMESTAMP;
  RETURN NULL;
END;
$$;

CREATE TRIGGER "Study_admission_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "Study" FOR EACH STATEMENT EXECUTE FUNCTION "sweetloop_admission_changed"();
CREATE TRIGGER "StudyArm_admission_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "StudyArm" FOR EACH STATEMENT EXECUTE FUNCTION "sweetloop_admission_changed"();
CREATE TRIGGER "StudyTask_admission_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "StudyTask" FOR EACH STATEMENT EXECUTE FUNCTION "sweetloop_admission_changed"();
CREATE TRIGGER "Task_admission_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "Task" FOR EACH STATEMENT EXECUTE FUNCTION "sweetloop_admission_changed"();
CREATE TRIGGER "PolicyVersion_admission_changed" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "PolicyVersion" FOR EACH STATEMENT EXECUTE FUNCTION "sweetloop_admission_changed"();
