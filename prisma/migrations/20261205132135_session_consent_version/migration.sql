-- Each session keeps the version of its study consent text the person had accepted when it started
-- (written at admission, exported with the session).
-- (No semicolons or quotes in these comments: the engine applies the script statement by statement.)

-- AlterTable
ALTER TABLE "Session" ADD COLUMN     "consentVersion" INTEGER;

-- Sessions started before this column: the newest version of the study text the person had accepted by the
-- time the session started (ConsentAcceptance rows), left null where the study has no text of its own.
UPDATE "Session" s
SET "consentVersion" = (
  SELECT max(ca."version") FROM "ConsentAcceptance" ca
  WHERE ca."participantId" = s."participantId" AND ca."studyId" = s."studyId" AND ca."acceptedAt" <= s."startedAt"
)
WHERE s."studyId" IS NOT NULL;
